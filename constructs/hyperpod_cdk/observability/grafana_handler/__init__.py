"""The Grafana content custom resource handler (a Lambda asset; see handler.py)."""
