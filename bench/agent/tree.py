# SPDX-License-Identifier: Apache-2.0
# tree.py PID: the CPU ticks and the resident KiB of PID and its descendants
# (those alive now, with what the children they waited for used), one line
import os
import sys

root = int(sys.argv[1])
kids, stat = {}, {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        s = open("/proc/%s/stat" % p).read()
        f = s[s.rindex(")") + 2:].split()
        stat[int(p)] = f
        kids.setdefault(int(f[1]), []).append(int(p))
    except OSError:
        pass
todo, ticks, rss = [root], 0, 0
while todo:
    p = todo.pop()
    f = stat.get(p)
    if f is None:
        continue
    ticks += sum(int(x) for x in f[11:15])
    rss += int(f[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
    todo += kids.get(p, [])
print(ticks, rss)
