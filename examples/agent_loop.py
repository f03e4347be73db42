#!/usr/bin/env python3
"""A scripted agent (no model) that drives background jobs only through the `process` tool.

It does what a coding agent does all day, with each step written as the tool call a model
would make:

1. starts a build in the background with notify_on_complete, so it is told when it ends;
2. starts an installer in a terminal (pty) that stops at a question, "Proceed? [y/N]";
3. waits until the installer blocks on its question (`wait` with until="input": no polling
   loop), reads the question off its terminal screen (`screen`) and answers it with `submit`
   (which types the answer and presses Enter; `write` would not press Enter);
4. waits for both jobs (wait is clamped to a maximum; on "timeout" it simply waits again);
5. reads the build log, paging with offset/limit, and prints what it did;
6. shows the completion / watch_match events that notify_on_complete and watch_patterns left for
   the host (the part of an agent framework that starts a new turn when a job finishes).

Run it next to the dashboard to watch the same jobs appear, ask, get answered and finish:

    .venv/bin/hermes-procs --home /tmp/demo-home                    # terminal 1: the dashboard
    .venv/bin/python examples/agent_loop.py --home /tmp/demo-home   # terminal 2: the "agent"

(from the checkout after `make run`; with `pip install .` into an environment of your own,
`hermes-procs` and its `python`).

It takes a few seconds. Exit status 0 when everything went as planned.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.tool import PROCESS_TOOL_SCHEMA, handle_process

BUILD = r"""
echo "[build] configuring"
for module in core cli tui docs; do
  sleep 0.3
  echo "[build] compiling $module"
done
echo "[build] linking"
sleep 0.2
echo "BUILD OK: 4 modules"
"""

INSTALLER = r"""
echo "widget-installer 1.0"
echo "This will install widget into ./vendor (12 files)."
printf "Proceed? [y/N] "
read -r answer
if [ "$answer" = "y" ]; then
  sleep 0.3
  echo "Installed widget 1.0."
  exit 0
fi
echo "Aborted."
exit 1
"""


class ScriptedAgent:
    """Calls the tool exactly like a model's tool calls would, and keeps a transcript."""

    def __init__(self, registry: ProcessRegistry, task_id: str, quiet: bool = False) -> None:
        self.registry = registry
        self.task_id = task_id
        self.quiet = quiet

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, flush=True)

    def process(self, **args) -> dict:
        shown = {k: (v if not isinstance(v, str) or len(v) < 60 else v.strip().splitlines()[0] + " ...")
                 for k, v in args.items()}
        self.say(f"agent> process {json.dumps(shown)}")
        result = json.loads(handle_process(args, registry=self.registry, task_id=self.task_id))
        self.say(f"  <- {_summary(result)}")
        return result

    def wait_for_exit(self, session_id: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            result = self.process(action="wait", session_id=session_id, timeout=10)
            if result["status"] != "timeout" or time.monotonic() > deadline:
                return result  # "timeout" means: the clamp or our timeout passed, the job still runs


def _summary(result: dict) -> str:
    status = result.get("status")
    if "processes" in result:
        return f"{len(result['processes'])} job(s): " + ", ".join(
            f"{p.get('name') or p['session_id']}={p['status']}" for p in result["processes"])
    parts = [str(status)]
    for key in ("session_id", "pid", "reason", "exit_code", "completion_reason", "bytes_written", "total_lines",
                "error"):
        if key in result and result[key] is not None:
            parts.append(f"{key}={result[key]}")
    if "lines" in result:  # a screen
        shown = [line for line in result["lines"] if line.strip()]
        return f"{status} screen {result['rows']}x{result['cols']}, last line: {shown[-1] if shown else ''!r}"
    text = result.get("output") or result.get("output_preview")
    if text:
        last = text.strip().splitlines()[-1] if text.strip() else ""
        parts.append(f"last line: {last!r}")
    return " ".join(parts)


def run(home: str | None, quiet: bool = False) -> int:
    registry = ProcessRegistry(home=home)
    agent = ScriptedAgent(registry, task_id=f"agent-loop-{int(time.time())}", quiet=quiet)
    agent.say(f"(the tool offered to the model: {PROCESS_TOOL_SCHEMA['name']!r}, "
              f"actions {PROCESS_TOOL_SCHEMA['parameters']['properties']['action']['enum']})")
    agent.say(f"(state home: {registry.home}; open the dashboard on it to watch)\n")

    # 1. the build: background + notify, so the host would hear about its end
    build = agent.process(action="start", command=BUILD, name="build", notify_on_complete=True)
    # 2. the installer needs a terminal and asks a question; watch for it
    installer = agent.process(action="start", command=INSTALLER, name="installer", pty=True,
                              watch_patterns=["Proceed?"], notify_on_complete=True)
    if build["status"] != "running" or installer["status"] != "running":
        print("could not start the jobs", file=sys.stderr)
        return 1

    # 3. wait until the installer blocks on its question, read its screen, answer (submit = type + Enter)
    answered = False
    asked = agent.process(action="wait", session_id=installer["session_id"], until="input", timeout=15)
    if asked.get("reason") == "awaiting_input":
        screen = agent.process(action="screen", session_id=installer["session_id"])
        if any("Proceed? [y/N]" in line for line in screen.get("lines", [])):
            agent.say("  (the installer's screen shows 'Proceed? [y/N]'; answering y)")
            agent.process(action="submit", session_id=installer["session_id"], data="y")
            answered = True

    # 4. wait for both; wait returns early when the job exits
    installed = agent.wait_for_exit(installer["session_id"])
    built = agent.wait_for_exit(build["session_id"])

    # 5. read the build log: the last lines, then page from the top
    agent.process(action="log", session_id=build["session_id"], limit=3)
    first = agent.process(action="log", session_id=build["session_id"], offset=0, limit=2)
    agent.process(action="list")

    # The host side of notify_on_complete / watch_patterns: the events an agent framework would
    # turn into a new turn ("your build finished with exit 0"). Not a tool call: the host drains them.
    ours = {build["session_id"], installer["session_id"]}
    events = [e for e in registry.drain_events(f"agent-loop-{agent.task_id}") if e.get("session_id") in ours]
    for event in events:
        agent.say(f"host> event {event['type']} for {event['session_id']}"
                  + (f": exit {event.get('exit_code')}" if event["type"] == "completion" else
                     f": pattern {event.get('pattern')!r}"))

    ok = (answered and installed.get("exit_code") == 0 and built.get("exit_code") == 0
          and "BUILD OK" in built.get("output", ""))
    agent.say("")
    agent.say("What the agent did:")
    agent.say(f"- started the build {build['session_id']} (notify_on_complete) -> exit {built.get('exit_code')}, "
              f"{'BUILD OK' if 'BUILD OK' in built.get('output', '') else 'no BUILD OK'}")
    agent.say(f"- started the installer {installer['session_id']} in a pty, waited for it to ask, saw "
              "'Proceed? [y/N]' on its screen, "
              f"{'answered y' if answered else 'never saw the question'} -> exit {installed.get('exit_code')}")
    agent.say(f"- read the build log: first lines {first.get('output', '').splitlines()}")
    agent.say("RESULT: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", help="state home (default: $HERMES_PROCS_HOME, ~/.hermes/procs, ...)")
    parser.add_argument("--quiet", action="store_true", help="print nothing, just the exit status")
    args = parser.parse_args(argv)
    return run(args.home, quiet=args.quiet)


if __name__ == "__main__":
    sys.exit(main())
