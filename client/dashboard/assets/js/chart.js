// chart.js: jobs per second pushed and completed (uPlot).
import { el } from './dom.js';

// A chart in `parent`; update(points) with [[unix seconds, pushed/s, completed/s], ...].
export function rateChart(parent) {
  const box = el('div', { className: 'chart', dataset: { testid: 'rate-chart' } });
  parent.appendChild(box);
  let plot = null;

  function size() {
    return { width: Math.max(300, box.clientWidth || parent.clientWidth || 600), height: 220 };
  }

  function create(data) {
    const options = {
      ...size(),
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      series: [
        {},
        { label: 'pushed / s', stroke: '#2f6fdb', width: 2, points: { show: false }, value: (u, v) => (v === null ? '-' : v.toFixed(1)) },
        { label: 'completed / s', stroke: '#1a9e55', width: 2, points: { show: false }, value: (u, v) => (v === null ? '-' : v.toFixed(1)) },
      ],
      axes: [{}, { label: 'jobs / s', size: 60 }],
    };
    plot = new window.uPlot(options, data, box);
    window.addEventListener('resize', () => plot && plot.setSize(size()));
  }

  return {
    update(points) {
      if (!window.uPlot) return;  // the library did not load: the table still shows
      const data = [points.map((p) => p[0]), points.map((p) => p[1]), points.map((p) => p[2])];
      if (!plot) create(data);
      else plot.setData(data);
    },
  };
}
