set terminal svg size 900,540 dynamic font 'sans,11'
set output 'ring_cpu0.svg'
set title 'Lock ring (seed 003), cpu0: median, bars min..max' noenhanced
set xlabel 'threads N'
set ylabel 'µs per step (lower is better)'
set logscale x 2
set xrange [1.33333:48]
set xtics (2, 4, 8, 16, 32)
set grid
set yrange [0:*]
set key top left noenhanced
set datafile missing 'NaN'
plot 'ring_cpu0.dat' using 1:2:3:4 with yerrorlines lw 2 title 'glibc NPTL', 'ring_cpu0.dat' using 1:5:6:7 with yerrorlines lw 2 title 'weft', 'ring_cpu0.dat' using 1:8:9:10 with yerrorlines lw 2 title 'musl (static)', 'ring_cpu0.dat' using 1:11:12:13 with yerrorlines lw 2 title 'floor (no library)'
