# SPDX-License-Identifier: Apache-2.0
"""Run the tests of a plan inside the virtual machine (tools/vm/run.py).

Usage (in the machine, by tools/vm/init):
    python3 guest.py PLAN.json TESTLOG.json [SAMPLER]

PLAN.json is what tools/vm/run.py wrote: a list of tests, each with its name,
command, environment, working directory, timeout and whether it may run
beside another.  Each test's outcome is written to TESTLOG.json as it ends,
one JSON object per line in the format of Meson's testlog.json (name, result,
returncode, duration, stdout, command, env), which tools/test-failures.py and
tools/vm/run.py read.  Parallel tests run two at a time (the machine has two
CPUs), the others alone.  A test with "run" and "runs" is one of N runs of
the same test in a row (OTEL_VM_REPEAT); with "stop_on_failure", the plan
ends at the first run that does not pass, and each repeated test's count of
passes in a row is printed ("vm: repeated NAME: ...").  With SAMPLER (otel-thread-ctx-sample), prints at
the end what the verifier processed of its BPF programs.  Exit status: 0 when
every test passed or skipped.
"""
import json
import os
import subprocess
import sys
import time


def start(test, base_env):
    env = dict(base_env)
    env.update(test["env"])
    out = open(f"/tmp/vm-test-{os.getpid()}-{test['index']}.out", "w+b")
    try:
        p = subprocess.Popen(test["cmd"], env=env, cwd=test["workdir"], stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    except OSError as e:
        out.write(f"vm: cannot start {test['cmd'][0]}: {e}\n".encode())
        p = None
    return {"test": test, "p": p, "out": out, "start": time.monotonic(),
            "wall": time.time(), "timed_out": False}


def finish(run, log):
    test, p = run["test"], run["p"]
    duration = time.monotonic() - run["start"]
    rc = p.returncode if p is not None else 127
    if run["timed_out"]:
        result = "TIMEOUT"
    elif rc == 0:
        result = "OK"
    elif rc == 77:
        result = "SKIP"
    else:
        result = "FAIL"
    run["out"].seek(0)
    stdout = run["out"].read().decode("utf-8", "replace")
    run["out"].close()
    os.unlink(run["out"].name)
    entry = {"name": test["name"], "stdout": stdout, "result": result,
             "starttime": run["wall"], "duration": duration, "returncode": rc,
             "env": test["env"], "command": test["cmd"]}
    log.write(json.dumps(entry) + "\n")
    log.flush()
    name = test["name"]
    if "runs" in test:
        name += f" (run {test['run']} of {test['runs']})"
    print(f"{test['index'] + 1:3}/{test['total']} {name:<70} {result:<8}"
          f"{duration:7.2f}s", flush=True)
    if result not in ("OK", "SKIP"):
        for line in stdout.rstrip("\n").splitlines()[-40:]:
            print(f"    {line}", flush=True)
    return result


def verifier(sampler):
    """Print what the kernel's verifier processed of the sampler's programs.

    The sampler runs (--all: nothing need publish) until its BPF programs
    are loaded, or a minute (loading one took longer than 5 s in an emulated
    machine on a busy build machine); their file descriptors tell
    verified_insns (Linux 5.16 and later).
    """
    p = subprocess.Popen([sampler, "--all", "--duration", "60"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    seen = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None and not seen:
        time.sleep(0.5)
        fds = f"/proc/{p.pid}/fdinfo"
        try:
            names = os.listdir(fds)
        except OSError:
            break
        for fd in names:
            try:
                with open(os.path.join(fds, fd), encoding="ascii", errors="replace") as f:
                    info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            except OSError:
                continue
            if "prog_tag" in info and "prog_type" in info:
                seen.add((info.get("prog_id", "?").strip(), info.get("prog_type", "?").strip(),
                          info.get("verified_insns", "? (kernel before 5.16)").strip()))
    p.kill()
    err = p.communicate()[1].decode("utf-8", "replace").strip()
    for prog_id, prog_type, insns in sorted(seen):
        print(f"vm: sampler's BPF program {prog_id} (type {prog_type}): verified_insns {insns}",
              flush=True)
    if not seen:
        print(f"vm: the sampler loaded no BPF program: {err}", flush=True)


def uptime():
    """Seconds since the machine booted."""
    with open("/proc/uptime", encoding="ascii") as f:
        return float(f.read().split()[0])


def main(argv):
    plan_path, log_path = argv[1], argv[2]
    print(f"vm: the plan starts {uptime():.0f}s after boot", flush=True)
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    base_env = dict(os.environ)
    for i, test in enumerate(plan):
        test["index"] = i
        test["total"] = len(plan)
    pending = [t for t in plan if t["is_parallel"]] + [t for t in plan if not t["is_parallel"]]
    counts = {}
    running = []
    # Repeated tests: name -> [passes in a row, runs made, first result
    # that was not OK].
    repeated = {}
    with open(log_path, "w", encoding="utf-8") as log:
        while pending or running:
            while pending and (not running or (len(running) < 2 and pending[0]["is_parallel"]
                                               and all(r["test"]["is_parallel"] for r in running))):
                running.append(start(pending.pop(0), base_env))
            time.sleep(0.05)
            for run in list(running):
                p = run["p"]
                if p is not None and p.poll() is None:
                    if time.monotonic() - run["start"] > run["test"]["timeout"]:
                        run["timed_out"] = True
                        os.killpg(p.pid, 9)
                        p.wait()
                    else:
                        continue
                running.remove(run)
                result = finish(run, log)
                counts[result] = counts.get(result, 0) + 1
                if "runs" in run["test"]:
                    r = repeated.setdefault(run["test"]["name"], [0, 0, None])
                    r[1] += 1
                    if result == "OK" and r[2] is None:
                        r[0] += 1
                    elif r[2] is None:
                        r[2] = result
                if result != "OK" and run["test"].get("stop_on_failure"):
                    pending.clear()
    for name, (ok, made, first) in repeated.items():
        runs = next(t["runs"] for t in plan if t["name"] == name)
        print(f"vm: repeated {name}: {ok} of {runs} runs passed in a row" +
              (f", then {first}" if first else ""), flush=True)
    print("vm: " + " ".join(f"{k}: {v}" for k, v in sorted(counts.items())) +
          f" ({uptime():.0f}s after boot)", flush=True)
    if len(argv) > 3:
        verifier(argv[3])
    return 0 if set(counts) <= {"OK", "SKIP"} else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
