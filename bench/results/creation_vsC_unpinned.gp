set terminal pngcairo size 900,540 font ',10'
set output 'creation_vsC_unpinned.png'
set title 'Concurrent creation, unpinned: creations per second (best over T, median of runs)'
set xlabel 'children per top-level thread C'
set ylabel 'creations per second'
set grid
set xtics (1, 5, 10)
set yrange [0:*]
set format y '%.0s%c'
set key bottom right noenhanced
set datafile missing 'NaN'
plot 'creation_vsC_unpinned.dat' using 1:2 with linespoints lw 2 pt 7 title 'glibc NPTL', \
     'creation_vsC_unpinned.dat' using 1:3 with linespoints lw 2 pt 5 title 'weft'
