// Preloaded into a benchmarked child process (`node --import ./bench/usage.mjs …`): when it exits, writes its
// CPU time (user + system, every thread) and peak RSS as JSON to the file BENCH_USAGE_FILE names, so a whole
// process (the product's CLI or the floor) is measured the same way without changing it.
import fs from 'node:fs';

const file = process.env.BENCH_USAGE_FILE;
if (file) {
  process.on('exit', () => {
    const usage = process.resourceUsage();
    fs.writeFileSync(file, JSON.stringify({ cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000, peakRssMb: usage.maxRSS / 1024 }));
  });
}
