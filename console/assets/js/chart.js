// A small line chart drawn as inline SVG with DOM calls (no library, no
// markup strings): y axis from 0 to a round maximum, time labels on the x
// axis, a legend, and a hover title per minute.

import { svg } from "./dom.js";

const W = 540, H = 210;
const M = { left: 48, right: 12, top: 28, bottom: 36 };

/** niceMax rounds n up to 1, 2 or 5 times a power of ten (at least 1). */
export function niceMax(n) {
  if (!(n > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(n)));
  for (const m of [1, 2, 5, 10]) if (n <= m * p) return m * p;
  return 10 * p;
}

function hhmm(t) {
  const d = new Date(t);
  return isNaN(d) ? "" : d.toISOString().slice(11, 16);
}

/**
 * lineChart draws series over minutes. opts: {id, title, yLabel, minutes:
 * [RFC 3339 minute starts], series: [{key, label, values: [number|null]}]}.
 * A null value leaves a gap. Each series is a <g data-series=key
 * data-values="v,v,…"> holding one polyline per unbroken run, so tests and
 * tools can read what was drawn.
 */
export function lineChart(opts) {
  const { minutes, series } = opts;
  const n = minutes.length;
  const pw = W - M.left - M.right, ph = H - M.top - M.bottom;
  let max = 0;
  for (const s of series) for (const v of s.values) if (v !== null && v > max) max = v;
  const ymax = niceMax(max);
  const x = (i) => M.left + (n <= 1 ? pw : (i * pw) / (n - 1));
  const y = (v) => M.top + ph - (v / ymax) * ph;
  const r = (v) => Math.round(v * 10) / 10;

  const grid = [0, ymax / 2, ymax].map((v) => svg("g", { class: "tick" },
    svg("line", { x1: M.left, x2: W - M.right, y1: r(y(v)), y2: r(y(v)), class: v === 0 ? "axis" : "grid" }),
    svg("text", { x: M.left - 6, y: r(y(v)) + 4, "text-anchor": "end" }, Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(1))));
  const xticks = n === 0 ? [] : [...new Set([0, Math.floor((n - 1) / 2), n - 1])].map((i) =>
    svg("text", { x: r(x(i)), y: H - M.bottom + 16, "text-anchor": i === 0 ? "start" : i === n - 1 ? "end" : "middle" }, hhmm(minutes[i])));

  const lines = series.map((s) => {
    const runs = [];
    let run = [];
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) {
        if (run.length) runs.push(run);
        run = [];
      } else run.push(`${r(x(i))},${r(y(v))}`);
    });
    if (run.length) runs.push(run);
    return svg("g", { class: "series series-" + s.key, "data-series": s.key, "data-values": s.values.map((v) => (v === null ? "" : v)).join(",") },
      runs.map((pts) => pts.length === 1
        ? svg("circle", { cx: pts[0].split(",")[0], cy: pts[0].split(",")[1], r: 2 })
        : svg("polyline", { points: pts.join(" ") })));
  });

  // One transparent column per minute whose title lists its values.
  const colW = n ? pw / Math.max(1, n - 1) : 0;
  const hover = minutes.map((m, i) => svg("rect", { class: "hover", x: r(x(i) - colW / 2), y: M.top, width: r(colW), height: ph },
    svg("title", {}, [hhmm(m) + " UTC", ...series.map((s) => `${s.label}: ${s.values[i] === null ? "no sample" : s.values[i]}`)].join("\n"))));

  let lx = M.left;
  const legend = series.map((s) => {
    const g = svg("g", { class: "legend-item series-" + s.key, "data-legend": s.key, transform: `translate(${lx},10)` },
      svg("line", { x1: 0, x2: 16, y1: 0, y2: 0 }),
      svg("text", { x: 20, y: 4 }, s.label));
    lx += 28 + s.label.length * 7;
    return g;
  });

  return svg("svg", { class: "chart", id: opts.id, viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": opts.title },
    svg("title", {}, opts.title),
    grid, xticks, lines, hover, legend,
    svg("text", { class: "axis-label", x: 12, y: M.top + ph / 2, transform: `rotate(-90 12 ${M.top + ph / 2})`, "text-anchor": "middle" }, opts.yLabel),
    svg("text", { class: "axis-label", x: M.left + pw / 2, y: H - 4, "text-anchor": "middle" }, "minute (UTC)"));
}
