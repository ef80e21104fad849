set terminal pngcairo size 900,540 font ',10'
set output 'creation_vsT_pinned.png'
set title 'Concurrent creation, pinned: creations per second (best over C, median of runs)'
set xlabel 'top-level threads T'
set ylabel 'creations per second'
set grid
set xtics (1, 2, 5, 10, 20)
set yrange [0:*]
set format y '%.0s%c'
set key bottom right noenhanced
set datafile missing 'NaN'
plot 'creation_vsT_pinned.dat' using 1:2 with linespoints lw 2 pt 7 title 'glibc NPTL', \
     'creation_vsT_pinned.dat' using 1:3 with linespoints lw 2 pt 5 title 'weft'
