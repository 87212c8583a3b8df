set terminal svg size 960,540 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/main/metrics/2026-11-29T23-42-49Z/warmup.svg'
set title 'warm-up: req/s through the first mix run (fresh server)'
set grid ytics
set key top left
set xlabel 'seconds'
set ylabel 'req/s'
set yrange [0:*]
set key noenhanced
plot '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 0 using 1:2 with lines title "hookd-release-sqlite c=100", '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 1 using 1:2 with lines title "hookd-release-postgres c=100", '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 2 using 1:2 with lines title "hookd-release-lto-pgo-sqlite c=100", '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 3 using 1:2 with lines title "hookd-release-lto-pgo-postgres c=100", '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 4 using 1:2 with lines title "hookd-static-sqlite c=100", '/work/main/metrics/2026-11-29T23-42-49Z/warmup.dat' index 5 using 1:2 with lines title "hookd-static-postgres c=100"
