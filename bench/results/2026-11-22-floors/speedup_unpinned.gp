set terminal svg size 900,540 dynamic font 'sans,11'
set output 'speedup_unpinned.svg'
set title 'Speed-up over glibc (unpinned): ratio of medians, bars = min..max of the paired runs; > 1: faster' noenhanced
set logscale y 2
set grid ytics
set xrange [-0.5:10.5]
set xtics ("throughput:1_creator,_1000_alive" 0, "throughput:20_creators,_1000_alive" 1, "ring:N2" 2, "ring:N4" 3, "ring:N8" 4, "ring:N16" 5, "ring:N32" 6, "broadcast:plain-w10" 7, "broadcast:locked-w10" 8, "broadcast:plain-w100" 9, "broadcast:locked-w100" 10) rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot 'speedup_unpinned.dat' using ($0 + -0.1):2:3:4 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'weft', 'speedup_unpinned.dat' using ($0 + 0.1):5:6:7 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'musl (static)', 1 with lines dt 2 lc rgb 'black' notitle
