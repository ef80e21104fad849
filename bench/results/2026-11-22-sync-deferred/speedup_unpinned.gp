set terminal svg size 900,540 dynamic font 'sans,11'
set output 'speedup_unpinned.svg'
set title 'Speed-up over glibc (unpinned): ratio of medians, bars = min..max of the paired runs; > 1: faster' noenhanced
set logscale y 2
set grid ytics
set xrange [-0.5:13.5]
set xtics ("uncontended:mutex" 0, "ring:N2" 1, "ring:N4" 2, "ring:N8" 3, "ring:N16" 4, "ring:N32" 5, "switch:cond" 6, "switch:sem" 7, "pingpong:cond" 8, "wakeup:cond" 9, "broadcast:plain-w10" 10, "broadcast:locked-w10" 11, "broadcast:plain-w100" 12, "broadcast:locked-w100" 13) rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot 'speedup_unpinned.dat' using ($0 + -0.1):2:3:4 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'weft', 'speedup_unpinned.dat' using ($0 + 0.1):5:6:7 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'musl (static)', 1 with lines dt 2 lc rgb 'black' notitle
