#!/usr/bin/env python3
# bench/startup_cpu.py: CPU time (user + sys, as the kernel sums it for a
# child) of `BIN call stat` and /bin/true, the commands taking turns RUNS
# times; the mean of each and its ratio to /bin/true. On a shared machine
# CPU time moves less with the load than wall time does (bench/startup.sh
# runs it; docs/benchmarks.md, Start-up).
#   python3 bench/startup_cpu.py RUNS ROOT BIN...
import resource
import subprocess
import sys

runs, root, bins = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
cmds = [("/bin/true", ["/bin/true"])] + [
    (b + " call stat", [b, "call", "stat", '{"path":"a.txt"}', "--root", root]) for b in bins]
tot = [[0.0, 0.0] for _ in cmds]
for _ in range(runs):
    for i, (_, argv) in enumerate(cmds):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        tot[i][0] += r1.ru_utime - r0.ru_utime
        tot[i][1] += r1.ru_stime - r0.ru_stime
base = sum(tot[0]) / runs
for (name, _), (u, s) in zip(cmds, tot):
    print(f"{name}: CPU {(u + s) / runs * 1e3:.2f} ms (user {u / runs * 1e3:.2f}, sys {s / runs * 1e3:.2f}), "
          f"mean of {runs} taking turns, {(u + s) / runs / base:.2f}x /bin/true")
