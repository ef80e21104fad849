#!/bin/bash
# A/B/C interleaved quick sync comparisons: glibc, old weft, A, B
cd /work/main
libs="none /tmp/libweft-old.so /tmp/libweft-A.so /tmp/libweft-B.so"
reps=${REPS:-5}
out=/tmp/syncab.txt; : > $out
run() { # label metricregex cmd...
  local label=$1 re=$2; shift 2
  for r in $(seq $reps); do
    for L in $libs; do
      if [ $L = none ]; then P=""; else P="env LD_PRELOAD=$L"; fi
      v=$(timeout 120 $P "$@" | grep -o "$re=[0-9.]*" | tail -1 | cut -d= -f2)
      echo "$label $L $v" >> $out
    done
  done
}
run "bcast-plain-w10" rounds_per_s build/bench/sync_broadcast -w 10 -r 3000
run "bcast-locked-w10" rounds_per_s build/bench/sync_broadcast -w 10 -r 3000 -k
run "bcast-plain-w100" rounds_per_s build/bench/sync_broadcast -w 100 -r 500
run "bcast-locked-w100" rounds_per_s build/bench/sync_broadcast -w 100 -r 500 -k
run "bcast-plain-w10-pin" rounds_per_s taskset -c 0 build/bench/sync_broadcast -w 10 -r 3000
run "bcast-locked-w10-pin" rounds_per_s taskset -c 0 build/bench/sync_broadcast -w 10 -r 3000 -k
run "bcast-plain-w100-pin" rounds_per_s taskset -c 0 build/bench/sync_broadcast -w 100 -r 500
run "bcast-locked-w100-pin" rounds_per_s taskset -c 0 build/bench/sync_broadcast -w 100 -r 500 -k
run "switch" switches_per_s build/bench/sync_switch -m cond -n 100000
run "switch-pin" switches_per_s taskset -c 0 build/bench/sync_switch -m cond -n 100000
run "wakeup" round_trips_per_s build/bench/sync_wakeup -n 50000
run "wakeup-pin" round_trips_per_s taskset -c 0 build/bench/sync_wakeup -n 50000
run "pingpong-500x1000(inv)" hits_per_s build/bench/sync_pingpong -t 500 -H 1000
run "pingpong-pin-500x200(inv)" hits_per_s taskset -c 0 build/bench/sync_pingpong -t 500 -H 200
python3 - <<'P'
import collections,statistics
d=collections.defaultdict(list)
for l in open('/tmp/syncab.txt'):
    p=l.split()
    if len(p)==3: d[(p[0],p[1])].append(float(p[2]))
labels=[]
for (a,b) in d:
    if a not in labels: labels.append(a)
libs=["none","/tmp/libweft-old.so","/tmp/libweft-A.so","/tmp/libweft-B.so"]
print("%-24s %10s %10s %10s %10s   old/g  A/g  B/g"%("bench","glibc","old","A","B"))
for a in labels:
    m=[statistics.median(d[(a,l)]) if d[(a,l)] else float('nan') for l in libs]
    print("%-24s %10.0f %10.0f %10.0f %10.0f   %.2f  %.2f  %.2f"%(a,*m,m[1]/m[0],m[2]/m[0],m[3]/m[0]))
P
