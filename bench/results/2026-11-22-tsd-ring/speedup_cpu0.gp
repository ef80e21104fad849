set terminal svg size 900,540 dynamic font 'sans,11'
set output 'speedup_cpu0.svg'
set title 'Speed-up over glibc (cpu0): ratio of medians, bars = min..max of the paired runs; > 1: faster' noenhanced
set logscale y 2
set grid ytics
set xrange [-0.5:8.5]
set xtics ("uncontended:mutex" 0, "ring:N2" 1, "ring:N8" 2, "tsd:getspecific" 3, "tsd:setspecific" 4, "tsd:testcancel" 5, "tsd:read" 6, "tsd:write" 7, "tsd:syscall_write" 8) rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot 'speedup_cpu0.dat' using ($0 + -0.1):2:3:4 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'weft', 'speedup_cpu0.dat' using ($0 + 0.1):5:6:7 with yerrorbars pt 7 ps 0.8 lw 1.5 title 'musl (static)', 1 with lines dt 2 lc rgb 'black' notitle
