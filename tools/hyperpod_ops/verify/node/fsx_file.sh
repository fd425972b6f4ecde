# shellcheck shell=bash
# FSx file access, on the controller (ControllerFsx): HPV_OP read|write|remove of HPV_FILE (a
# path under the mount), HPV_DATA the base64 of what to write.
# This runs as root in folders users may write (a data repository's path): no component of the
# path is followed through a link, a folder it makes is 0700, and the file is opened with
# O_NOFOLLOW, so a link a user planted (.hyperpod-verify/<run>/export.txt -> /etc/passwd) is
# refused instead of written through (security review L7, issue 34).
python3 -S - "$HPV_OP" "$HPV_FILE" "${HPV_DATA:-}" <<'PY'
import base64, errno, os, sys

op, path, data = sys.argv[1:4]
parts = [p for p in path.split("/") if p]
if not parts or any(p in (".", "..") for p in parts):
    print(f"cannot use {path}: not a plain absolute path")
    sys.exit(1)
DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
fd = os.open("/", DIR)
for part in parts[:-1]:
    try:
        child = os.open(part, DIR, dir_fd=fd)
    except FileNotFoundError:
        if op != "write":
            if op == "read":
                print("HPV-NOFILE")
            sys.exit(0)
        os.mkdir(part, 0o700, dir_fd=fd)
        child = os.open(part, DIR, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            print(f"refused: {part} in {path} is a link or not a folder")
            sys.exit(1)
        raise
    os.close(fd)
    fd = child
name = parts[-1]
try:
    if op == "read":
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except FileNotFoundError:
            print("HPV-NOFILE")
        else:
            with os.fdopen(handle, "rb") as f:
                print("HPV-FILE " + base64.b64encode(f.read()).decode())
    elif op == "write":
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=fd)
        with os.fdopen(handle, "wb") as f:
            f.write(base64.b64decode(data))
        print("HPV-WRITTEN")
    elif op == "remove":
        # rm in the folder opened above: a link swapped in above it is never followed
        os.fchdir(fd)
        sys.stdout.flush()
        os.execvp("rm", ["rm", "-rf", "--", name])
except OSError as exc:
    if exc.errno == errno.ELOOP:
        print(f"refused: {path} is a link")
    else:
        print(f"cannot {op} {path}: {exc.strerror}")
    sys.exit(1)
PY
rc=$?
if [[ "$HPV_OP" == remove && $rc -eq 0 ]]; then echo "HPV-REMOVED"; fi
((rc == 0)) || exit 1
hpv_done
