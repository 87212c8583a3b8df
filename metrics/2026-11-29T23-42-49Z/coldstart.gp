set terminal svg size 960,540 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/main/metrics/2026-11-29T23-42-49Z/coldstart.svg'
set title 'exec to first 200 (ms)'
set grid ytics
set key top left
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -20 noenhanced
set key outside top center horizontal noenhanced
set ylabel 'ms'
set yrange [0:*]
plot '/work/main/metrics/2026-11-29T23-42-49Z/coldstart.dat' using 2:xtic(1) title "first run (cold)", '/work/main/metrics/2026-11-29T23-42-49Z/coldstart.dat' using 3 title "warm median", '/work/main/metrics/2026-11-29T23-42-49Z/coldstart.dat' using 4 title "app-reported median"
