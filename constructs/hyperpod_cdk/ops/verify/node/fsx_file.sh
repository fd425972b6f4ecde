# shellcheck shell=bash
# FSx file access, on the controller (ControllerFsx): HPV_OP read|write|remove of HPV_FILE (a
# path under the mount), HPV_DATA the base64 of what to write.
case "$HPV_OP" in
  read)
    if [[ -f "$HPV_FILE" ]]; then echo "HPV-FILE $(base64 -w0 "$HPV_FILE")"; else echo "HPV-NOFILE"; fi ;;
  write)
    if ! { mkdir -p "$(dirname "$HPV_FILE")" && printf %s "$HPV_DATA" | base64 -d >"$HPV_FILE"; }; then
      echo "cannot write $HPV_FILE"
      exit 1
    fi
    echo "HPV-WRITTEN" ;;
  remove)
    rm -rf -- "$HPV_FILE" || exit 1
    echo "HPV-REMOVED" ;;
esac
hpv_done
