set terminal svg size 900,540 dynamic font 'sans,11'
set output 'creation_ratio_cpu0.svg'
set title 'Creation matrix, cpu0: weft vs glibc per cell (ratio of medians, > 1: weft faster)' noenhanced
set xlabel 'creators T'
set ylabel 'children per creator C'
set view map
set pm3d map corners2color c1
set palette defined (-1 '#e07070', 0 'white', 1 '#7090e0')
set cbrange [0.5:2]
set logscale cb 2
set xrange [-0.5:19.5]
set yrange [-0.5:9.5]
set xtics ("1" 0, "2" 1, "3" 2, "4" 3, "5" 4, "6" 5, "7" 6, "8" 7, "9" 8, "10" 9, "11" 10, "12" 11, "13" 12, "14" 13, "15" 14, "16" 15, "17" 16, "18" 17, "19" 18, "20" 19)
set ytics ("1" 0, "2" 1, "3" 2, "4" 3, "5" 4, "6" 5, "7" 6, "8" 7, "9" 8, "10" 9)
set datafile missing 'NaN'
splot 'creation_ratio_cpu0.dat' using 1:2:3 with image notitle, \
      'creation_ratio_cpu0.dat' using 1:2:3:(sprintf('%.2f', $3)) with labels notitle
