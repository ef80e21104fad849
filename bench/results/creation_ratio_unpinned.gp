set terminal pngcairo size 900,540 font ',10'
set output 'creation_ratio_unpinned.png'
set title 'Concurrent creation, unpinned: weft / glibc throughput (>1: weft faster)' noenhanced
set xlabel 'top-level threads T'
set ylabel 'ratio of medians'
set grid
set xtics (1, 2, 5, 10, 20)
set yrange [0:*]
set key bottom right
set datafile missing 'NaN'
plot 1 with lines dt 2 lc rgb 'black' notitle, 'creation_ratio_unpinned_C1.dat' using 1:2 with linespoints lw 2 title 'C=1', 'creation_ratio_unpinned_C5.dat' using 1:2 with linespoints lw 2 title 'C=5', 'creation_ratio_unpinned_C10.dat' using 1:2 with linespoints lw 2 title 'C=10'
