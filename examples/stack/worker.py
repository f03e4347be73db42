"""The example stack's worker: asks the API now and then and crashes after a few rounds, to show
`restart = "always"` with its backoff (the dashboard counts its restarts)."""

import time
import urllib.request

for round_ in range(1, 6):
    with urllib.request.urlopen("http://127.0.0.1:7412/", timeout=5) as answer:
        print(f"worker round {round_}: {answer.read().decode().strip()}", flush=True)
    time.sleep(1)
raise SystemExit("worker: out of work (crashing on purpose)")
