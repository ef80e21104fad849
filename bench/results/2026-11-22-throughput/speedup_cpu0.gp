set terminal svg size 900,540 dynamic font 'sans,11'
set output 'speedup_cpu0.svg'
set title 'Speed-up over glibc (cpu0): ratio of medians, bars = min..max of the paired runs; > 1: faster' noenhanced
set logscale y 2
set grid ytics
set xrange [-0.5:1.5]
set xtics ("throughput:1_creator,_1000_alive" 0, "throughput:20_creators,_1000_alive" 1) rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot 'speedup_cpu0.dat' using ($0 + 0):2:3:4 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'weft', 1 with lines dt 2 lc rgb 'black' notitle
