// Renders chart specifications to SVG files with Apache ECharts' server-side renderer.
//
// Usage: node render.mjs <specs.json>
// specs.json: [{ "file": "<absolute or relative output path>.svg", "width": 900, "height": 420,
//               "option": { ...an ECharts option object... } }, ...]
// Prints one line per file written; exits non-zero (naming the chart) if any chart fails.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as echarts from 'echarts';

const specsPath = process.argv[2];
if (!specsPath) {
  console.error('usage: node render.mjs <specs.json>');
  process.exit(2);
}

const specs = JSON.parse(readFileSync(specsPath, 'utf8'));
let failed = 0;
for (const spec of specs) {
  const file = resolve(dirname(specsPath), spec.file);
  try {
    const chart = echarts.init(null, null, {
      renderer: 'svg',
      ssr: true,
      width: spec.width ?? 900,
      height: spec.height ?? 420,
    });
    // Static images: no animation, white background so the files read well anywhere.
    chart.setOption({ animation: false, backgroundColor: '#ffffff', ...spec.option });
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, chart.renderToSVGString());
    chart.dispose();
    console.log(`rendered ${file}`);
  } catch (error) {
    failed++;
    console.error(`failed to render ${file}: ${error?.stack ?? error}`);
  }
}

process.exit(failed === 0 ? 0 : 1);
