#!/usr/bin/env node
// Checks one swaplab HTML report in a real headless Chromium, as a person
// would look at it.
//
//   node tests/browser/check-report.mjs REPORT.html [--screenshot OUT.png]
//        [--expect-text STR]... [--json]
//
// Prints a summary (pretty JSON; with --json one line of JSON and nothing
// else) on stdout:
//   {report, screenshot, sections, figures: [{id, series_expected,
//    series_found, drawing_elements, width, height}], details_opened,
//   csv_links_checked, svg_links_checked, errors: [...]}
// and exits 0 when errors is empty, 1 when it is not (each error names the
// element and what is wrong), 2 when the check could not run (bad usage,
// Chromium did not start, the page did not load).
//
// Chromium is Debian's (/usr/bin/chromium, or $SWAPLAB_CHROMIUM), driven by
// playwright-core: Playwright's own browser download does not work here.
//
// The report contract checked:
// * Sections: <section class="report-section" id="sec-N" data-kind="KIND">
//   with a non-empty <h2>; at least one; ids unique.
// * Figures: <figure class="fig" id="fig-N" data-series='["a","b"]'> (a JSON
//   array of strings, may be []) holding exactly one inline <svg> and a
//   non-empty <figcaption>. Every named series is the text of a <text>
//   element in that SVG (whitespace collapsed and trimmed). As rendered
//   (after every <details> is opened) the SVG has a non-zero width and
//   height, and it holds at least one drawing element (polyline, polygon,
//   circle, ellipse, rect, path, line) with a non-empty box, not counting a
//   rect that covers the whole SVG (the background).
// * For each figure fig-N: one <a class="dl-svg" download="fig-N.svg"
//   data-for="fig-N">, and inside the figure one <a class="dl-csv"> (its
//   data; the download is named after its table).
//   Clicking a dl-svg link must download a file named as its download
//   attribute that parses as XML with an <svg> root in the SVG namespace
//   holding a drawing element.
// * Every <a class="dl-csv"> (figures and tables): href is a
//   data:text/csv URL; clicking it downloads a file named as its download
//   attribute, UTF-8 (a BOM is allowed), RFC 4180 CSV (quoted fields may
//   hold commas, quotes and newlines; CRLF or LF), whose header row equals
//   the JSON array in data-columns, whose data row count equals data-rows,
//   and whose every row has as many fields as the header.
// * Collapsibles: every <details> has the class schema, linux-config or
//   data and a <summary> child, and starts closed; clicking the summary
//   opens it (open is true) and its content (what follows the summary)
//   gets a non-zero height.
// * No console error, no uncaught page error, no dialog (alert, confirm,
//   prompt, beforeunload), no request other than data:, blob:, about: and
//   the report itself (requests are blocked as well as reported), and no
//   src/srcset/poster/data/link href/SVG href attribute pointing outside
//   the page.
// * Script safety: every <script> element (in the DOM after load, or seen
//   inserted at any time during the check) is the one inline
//   <script id="swaplab-js">; no element has an on* attribute; no
//   attribute value is a javascript: URL.
// * Each --expect-text STR appears literally in document.body.innerText
//   (after the details are opened): this proves escaping.
// The full-page screenshot is taken after every <details> is opened.

import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const CHROMIUM = process.env.SWAPLAB_CHROMIUM || "/usr/bin/chromium";
// Without the background-networking flags Chromium's own connections (to
// update, sync, component servers) are refused here, many at a time.
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
// One click or one download; generous, as several checks may share 2 cores
// (it is waited for in full only when something is wrong).
const STEP_MS = 15000;

function usage(msg) {
  if (msg) console.error(`check-report: ${msg}`);
  console.error(
    "usage: node tests/browser/check-report.mjs REPORT.html [--screenshot OUT.png] [--expect-text STR]... [--json]",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const a = { report: null, screenshot: null, expect: [], json: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === "--json") a.json = true;
    else if (v === "--screenshot" || v === "--expect-text") {
      if (i + 1 >= argv.length) usage(`${v} needs a value`);
      if (v === "--screenshot") a.screenshot = argv[++i];
      else a.expect.push(argv[++i]);
    } else if (v.startsWith("--")) usage(`unknown option ${v}`);
    else if (a.report === null) a.report = v;
    else usage(`more than one report: ${v}`);
  }
  if (a.report === null) usage("no report given");
  return a;
}

// RFC 4180, strictly: returns the records, or throws saying where it breaks.
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = "";
  let started = false; // the current record has begun
  let quoted = false; // inside a quoted field
  let line = 1;
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
      } else if (c === '"') {
        quoted = false;
        i++;
        const n = text[i];
        if (n !== undefined && n !== "," && n !== "\r" && n !== "\n")
          throw new Error(`line ${line}: ${JSON.stringify(n)} after a closing quote`);
      } else {
        if (c === "\n") line++;
        field += c;
        i++;
      }
      continue;
    }
    started = true;
    if (c === '"') {
      if (field !== "") throw new Error(`line ${line}: a quote inside an unquoted field`);
      quoted = true;
      i++;
    } else if (c === ",") {
      row.push(field);
      field = "";
      i++;
    } else if (c === "\r" || c === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      started = false;
      i += c === "\r" && text[i + 1] === "\n" ? 2 : 1;
      line++;
    } else {
      field += c;
      i++;
    }
  }
  if (quoted) throw new Error("a quoted field is not closed at the end");
  if (started) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

// --- In-page helpers (serialised into the page by page.evaluate) ---------

// Runs before the report's own scripts: remembers every <script> element
// ever inserted, so that one which removes itself is still seen.
function watchScripts() {
  window.__swaplabScripts = [];
  new MutationObserver((records) => {
    for (const r of records)
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        if (n.localName === "script") window.__swaplabScripts.push(n);
        for (const s of n.querySelectorAll("script")) window.__swaplabScripts.push(s);
      }
  }).observe(document, { childList: true, subtree: true });
}

// Everything that can be read from the DOM without touching it.
function inspectStatic() {
  const DETAILS_CLASSES = ["schema", "linux-config", "data"];
  const errors = [];
  const name = (el) => {
    let s = el.localName;
    if (el.id) s += `#${el.id}`;
    else if (el.classList && el.classList.length) s += `.${[...el.classList].join(".")}`;
    if (el.getAttribute("download")) s += `[download="${el.getAttribute("download")}"]`;
    return s;
  };
  const jsonArrayOfStrings = (el, attr) => {
    const raw = el.getAttribute(attr);
    if (raw === null) return { err: `has no ${attr} attribute` };
    try {
      const v = JSON.parse(raw);
      if (Array.isArray(v) && v.every((x) => typeof x === "string")) return { v };
    } catch (e) {
      return { err: `${attr}='${raw}' is not JSON (${e.message})` };
    }
    return { err: `${attr}='${raw}' is not a JSON array of strings` };
  };

  // Script safety.
  const scripts = new Set([...document.querySelectorAll("script"), ...(window.__swaplabScripts || [])]);
  let ours = 0;
  for (const s of scripts) {
    const text = (s.textContent || "").replace(/\s+/g, " ").trim().slice(0, 60);
    const what = `<script${s.id ? ` id="${s.id}"` : ""}${s.getAttribute("src") ? ` src="${s.getAttribute("src")}"` : ""}> "${text}"${s.isConnected ? "" : " (removed itself)"}`;
    if (s.id !== "swaplab-js") errors.push(`script ${what}: only <script id="swaplab-js"> is allowed`);
    else if (ours++ > 0) errors.push(`script ${what}: a second <script id="swaplab-js">`);
    else if (s.hasAttribute("src")) errors.push(`script ${what}: swaplab-js must be inline`);
  }
  const resourceAttrs = { src: 1, srcset: 1, poster: 1 };
  for (const el of document.querySelectorAll("*")) {
    for (const at of el.attributes) {
      const n = at.name.toLowerCase();
      const v = at.value;
      if (n.startsWith("on"))
        errors.push(`${name(el)}: event-handler attribute ${at.name}="${v.slice(0, 60)}"`);
      // URL parsers drop ASCII whitespace and control characters.
      if (/^javascript:/i.test(v.replace(/[\u0000-\u0020]/g, "")))
        errors.push(`${name(el)}: ${at.name} is a javascript: URL (${v.slice(0, 60)})`);
      const loads =
        n in resourceAttrs ||
        (n === "href" && el.localName === "link") ||
        (n === "data" && el.localName === "object") ||
        ((n === "href" || n === "xlink:href") && el.namespaceURI === "http://www.w3.org/2000/svg");
      const local = /^\s*(data:|blob:|about:|#|$)/i;
      if (loads && !(n === "srcset" ? v.split(",").every((c) => local.test(c.trim())) : local.test(v)))
        errors.push(`${name(el)}: ${at.name}="${v.slice(0, 80)}" loads from outside the page (the report must work offline)`);
    }
  }

  // Sections.
  const sections = [...document.querySelectorAll("section.report-section")];
  if (sections.length === 0) errors.push('page: no <section class="report-section">');
  const seen = new Set();
  for (const s of sections) {
    if (!/^sec-\d+$/.test(s.id)) errors.push(`${name(s)}: id "${s.id}" is not sec-N`);
    else if (seen.has(s.id)) errors.push(`${name(s)}: duplicate section id`);
    seen.add(s.id);
    if (!(s.getAttribute("data-kind") || "").trim()) errors.push(`${name(s)}: no data-kind`);
    const h2 = s.querySelector("h2");
    if (!h2 || !h2.textContent.trim()) errors.push(`${name(s)}: no <h2> title`);
  }

  // Figures and their links (sizes are measured later, once opened).
  const figures = [];
  const figIds = new Set();
  for (const f of document.querySelectorAll("figure.fig")) {
    if (!/^fig-\d+$/.test(f.id)) errors.push(`${name(f)}: id "${f.id}" is not fig-N`);
    else if (figIds.has(f.id)) errors.push(`${name(f)}: duplicate figure id`);
    figIds.add(f.id);
    const series = jsonArrayOfStrings(f, "data-series");
    if (series.err) errors.push(`${name(f)}: ${series.err}`);
    const expected = series.v || [];
    const svgs = f.querySelectorAll("svg");
    if (svgs.length !== 1) errors.push(`${name(f)}: holds ${svgs.length} <svg> elements, not exactly one`);
    const norm = (s) => s.replace(/\s+/g, " ").trim();
    const texts = svgs.length ? [...svgs[0].querySelectorAll("text")].map((t) => norm(t.textContent)) : [];
    const found = expected.filter((s) => texts.includes(norm(s)));
    for (const s of expected)
      if (!found.includes(s))
        errors.push(`${name(f)}: declared series ${JSON.stringify(s)} is not a <text> of its SVG legend (texts: ${JSON.stringify(texts.slice(0, 12))})`);
    const cap = f.querySelector("figcaption");
    if (!cap || !cap.textContent.trim()) errors.push(`${name(f)}: no <figcaption> text`);
    const svgLinks = document.querySelectorAll(`a.dl-svg[data-for="${CSS.escape(f.id)}"]`);
    if (svgLinks.length !== 1) errors.push(`${name(f)}: ${svgLinks.length} a.dl-svg links with data-for="${f.id}", not one`);
    else if (svgLinks[0].getAttribute("download") !== `${f.id}.svg`)
      errors.push(`${name(svgLinks[0])}: download should be "${f.id}.svg"`);
    const csvLinks = f.querySelectorAll("a.dl-csv");
    if (csvLinks.length !== 1) errors.push(`${name(f)}: holds ${csvLinks.length} a.dl-csv links (its data), not one`);
    figures.push({ id: f.id, series_expected: expected, series_found: found });
  }

  // Download links.
  const svgLinks = [...document.querySelectorAll("a.dl-svg")].map((a) => {
    const forId = a.getAttribute("data-for");
    const fig = forId && document.getElementById(forId);
    if (!fig || !fig.matches("figure.fig")) errors.push(`${name(a)}: data-for="${forId}" names no figure.fig`);
    if (!/\.svg$/.test(a.getAttribute("download") || "")) errors.push(`${name(a)}: download attribute does not end in .svg`);
    return { name: name(a), download: a.getAttribute("download") };
  });
  const csvLinks = [...document.querySelectorAll("a.dl-csv")].map((a) => {
    const cols = jsonArrayOfStrings(a, "data-columns");
    if (cols.err) errors.push(`${name(a)}: ${cols.err}`);
    const rowsRaw = a.getAttribute("data-rows");
    const rows = /^\d+$/.test(rowsRaw || "") ? Number(rowsRaw) : null;
    if (rows === null) errors.push(`${name(a)}: data-rows="${rowsRaw}" is not a row count`);
    const href = a.getAttribute("href") || "";
    if (!/^data:text\/csv[;,]/i.test(href)) errors.push(`${name(a)}: href is not a data:text/csv URL (${href.slice(0, 60)})`);
    if (!/\.csv$/.test(a.getAttribute("download") || "")) errors.push(`${name(a)}: download attribute does not end in .csv`);
    return { name: name(a), download: a.getAttribute("download"), columns: cols.v || null, rows };
  });

  // Collapsibles, before anything is clicked.
  const details = [...document.querySelectorAll("details")].map((d) => {
    const summary = d.querySelector(":scope > summary");
    const label = `${name(d)} "${(summary ? summary.textContent : "").trim().slice(0, 40)}"`;
    if (!DETAILS_CLASSES.some((c) => d.classList.contains(c)))
      errors.push(`${label}: has none of the classes ${DETAILS_CLASSES.join(", ")}`);
    if (!summary) errors.push(`${label}: no <summary>`);
    if (d.open) errors.push(`${label}: starts open`);
    return { label, clickable: !!summary && !d.open };
  });
  return { errors, sections: sections.length, figures, svgLinks, csvLinks, details };
}

// After a summary click: is the details open, is its content shown?
function detailsState(d) {
  const s = d.querySelector(":scope > summary");
  const r = document.createRange();
  r.setStartAfter(s);
  r.setEnd(d, d.childNodes.length);
  return { open: d.open, height: r.getBoundingClientRect().height };
}

// Rendered size and drawing elements of each figure's SVG.
function measureFigures() {
  return [...document.querySelectorAll("figure.fig")].map((f) => {
    const svg = f.querySelector("svg");
    if (!svg) return { width: 0, height: 0, drawing_elements: 0 };
    const box = svg.getBoundingClientRect();
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const W = vb && vb.width ? vb.width : svg.width.baseVal.value || box.width;
    const H = vb && vb.height ? vb.height : svg.height.baseVal.value || box.height;
    let n = 0;
    for (const el of svg.querySelectorAll("polyline, polygon, circle, ellipse, rect, path, line")) {
      let b;
      try {
        b = el.getBBox();
      } catch {
        continue;
      }
      if (b.width + b.height <= 0) continue;
      const background = el.localName === "rect" && b.x <= 0 && b.y <= 0 && b.width >= W && b.height >= H;
      if (!background) n++;
    }
    return { width: box.width, height: box.height, drawing_elements: n };
  });
}

// A downloaded SVG file, parsed by the browser's XML parser.
function parseSvgFile(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const perr = doc.getElementsByTagName("parsererror")[0];
  if (perr) return { error: `does not parse as XML: ${perr.textContent.replace(/\s+/g, " ").trim().slice(0, 160)}` };
  const root = doc.documentElement;
  if (root.localName !== "svg") return { error: `root element is <${root.nodeName}>, not <svg>` };
  if (root.namespaceURI !== "http://www.w3.org/2000/svg")
    return { error: `root <svg> is not in the SVG namespace (xmlns="${root.namespaceURI}")` };
  const drawing = root.querySelectorAll("polyline, polygon, circle, ellipse, rect, path, line").length;
  if (drawing === 0) return { error: "holds no drawing element" };
  return {};
}

// --- The check -----------------------------------------------------------

async function check(args, reportPath, out) {
  const errors = out.errors;
  const reportUrl = pathToFileURL(reportPath).href;
  const allowed = (u) => /^(data|blob|about):/i.test(u) || u.split("#")[0] === reportUrl;
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "swaplab-chromium-"));
  let context;
  try {
    try {
      context = await chromium.launchPersistentContext(userDataDir, {
        executablePath: CHROMIUM,
        headless: true,
        args: FLAGS,
        acceptDownloads: true,
        viewport: { width: 1280, height: 900 },
        timeout: 60000,
      });
    } catch (e) {
      throw new Error(`could not start Chromium (${CHROMIUM}): ${e.message.split("\n")[0]}`);
    }
    await context.addInitScript(watchScripts);
    // Block everything but the page itself; report it once, on "request".
    await context.route("**/*", (route) =>
      allowed(route.request().url()) ? route.continue() : route.abort("blockedbyclient"),
    );
    context.on("request", (r) => {
      if (!allowed(r.url()))
        errors.push(`network: request to ${r.url()} (${r.resourceType()}): the report must work offline`);
    });
    const page = context.pages()[0] || (await context.newPage());
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      const l = m.location();
      errors.push(`console error: ${m.text()}${l && l.url ? ` (at ${l.url}:${l.lineNumber})` : ""}`);
    });
    page.on("pageerror", (e) => errors.push(`uncaught page error: ${e.message}`));
    page.on("dialog", (d) => {
      errors.push(`dialog: ${d.type()} "${d.message()}"`);
      d.dismiss().catch(() => {});
    });
    context.on("page", (p) => {
      if (p !== page) errors.push(`page: a new window opened (${p.url()})`);
    });

    try {
      await page.goto(reportUrl, { waitUntil: "load", timeout: 30000 });
    } catch (e) {
      throw new Error(`could not load ${reportUrl}: ${e.message.split("\n")[0]}`);
    }

    const st = await page.evaluate(inspectStatic);
    errors.push(...st.errors);
    out.sections = st.sections;

    // Open every collapsible by clicking its summary, in document order
    // (an outer one before the ones inside it).
    const allDetails = page.locator("details");
    for (let i = 0; i < st.details.length; i++) {
      const d = st.details[i];
      if (!d.clickable) continue;
      const loc = allDetails.nth(i);
      try {
        await loc.locator(":scope > summary").click({ timeout: STEP_MS });
      } catch (e) {
        errors.push(`${d.label}: its summary cannot be clicked (${e.message.split("\n")[0]})`);
        continue;
      }
      const s = await loc.evaluate(detailsState);
      if (!s.open) errors.push(`${d.label}: clicking the summary did not open it`);
      else if (!(s.height > 0)) errors.push(`${d.label}: open, but its content has no height`);
      else out.details_opened++;
    }

    const sizes = await page.evaluate(measureFigures);
    st.figures.forEach((f, i) => {
      const m = sizes[i];
      out.figures.push({ ...f, drawing_elements: m.drawing_elements, width: m.width, height: m.height });
      if (!(m.width > 0 && m.height > 0)) errors.push(`figure#${f.id}: its SVG is rendered ${m.width}x${m.height}`);
      if (m.drawing_elements === 0)
        errors.push(`figure#${f.id}: its SVG has no drawing element (polyline, circle, rect, path, line) besides text and background`);
    });

    const visible = await page.evaluate(() => document.body.innerText);
    for (const t of args.expect)
      if (!visible.includes(t)) errors.push(`page: expected text ${JSON.stringify(t)} is not in the visible text`);

    if (args.screenshot) {
      fs.mkdirSync(path.dirname(path.resolve(args.screenshot)), { recursive: true });
      await page.screenshot({ path: args.screenshot, fullPage: true });
      out.screenshot = path.resolve(args.screenshot);
    }

    // Click a link and take what it downloads (or say why not).
    // Chromium holds back a burst of downloads from one page ("this site is
    // attempting to download multiple files"), whatever the profile says:
    // when a click brings nothing, reload the page and click once more
    // before calling it broken.
    // It allows 10 per page load here: reload before each tenth.
    let downloads = 0;
    const download = async (loc, label, expectName) => {
      if (++downloads % 10 === 0) await page.reload();
      const first = await downloadOnce(loc, label, expectName, true);
      if (first !== RETRY) return first;
      await page.reload();
      return downloadOnce(loc, label, expectName, false);
    };
    const RETRY = Symbol("retry");
    const downloadOnce = async (loc, label, expectName, mayRetry) => {
      const before = page.url();
      const waiting = page.waitForEvent("download", { timeout: STEP_MS }).catch(() => null);
      try {
        await loc.click({ timeout: STEP_MS });
      } catch (e) {
        errors.push(`${label}: cannot be clicked (${e.message.split("\n")[0]})`);
        return null;
      }
      const dl = await waiting;
      if (page.url() !== before) {
        errors.push(`${label}: clicking it navigated to ${page.url().slice(0, 80)}`);
        await page.goto(before).catch(() => {});
      }
      if (!dl && mayRetry) return RETRY;
      if (!dl) {
        errors.push(`${label}: clicking it downloaded nothing (twice, the second time on a freshly loaded page)`);
        return null;
      }
      if (dl.suggestedFilename() !== expectName)
        errors.push(`${label}: downloaded as "${dl.suggestedFilename()}", not "${expectName}"`);
      const file = await dl.path().catch(() => null);
      if (!file) {
        errors.push(`${label}: the download failed (${await dl.failure()})`);
        return null;
      }
      return fs.readFileSync(file);
    };

    for (let i = 0; i < st.svgLinks.length; i++) {
      const l = st.svgLinks[i];
      const bytes = await download(page.locator("a.dl-svg").nth(i), l.name, l.download);
      if (!bytes) continue;
      const r = await page.evaluate(parseSvgFile, bytes.toString("utf8"));
      if (r.error) errors.push(`${l.name}: the downloaded SVG ${r.error}`);
      else out.svg_links_checked++;
    }

    for (let i = 0; i < st.csvLinks.length; i++) {
      const l = st.csvLinks[i];
      const bytes = await download(page.locator("a.dl-csv").nth(i), l.name, l.download);
      if (!bytes || !l.columns || l.rows === null) continue;
      let rows;
      try {
        const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes).replace(/^\uFEFF/, "");
        rows = parseCsv(text);
      } catch (e) {
        errors.push(`${l.name}: the downloaded CSV is not UTF-8 CSV: ${e.message}`);
        continue;
      }
      const before = errors.length;
      if (rows.length === 0) errors.push(`${l.name}: the downloaded CSV is empty`);
      else if (JSON.stringify(rows[0]) !== JSON.stringify(l.columns))
        errors.push(`${l.name}: CSV header ${JSON.stringify(rows[0])} is not data-columns ${JSON.stringify(l.columns)}`);
      else {
        const n = rows.length - 1;
        if (n !== l.rows) errors.push(`${l.name}: data-rows="${l.rows}" but the CSV has ${n} data rows`);
        const bad = rows.findIndex((r) => r.length !== l.columns.length);
        if (bad > 0)
          errors.push(`${l.name}: CSV record ${bad + 1} has ${rows[bad].length} fields, the header ${l.columns.length}`);
      }
      if (errors.length === before) out.csv_links_checked++;
    }
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const reportPath = path.resolve(args.report);
  if (!fs.existsSync(reportPath)) usage(`no such file: ${args.report}`);
  const out = {
    report: reportPath,
    screenshot: null,
    sections: 0,
    figures: [],
    details_opened: 0,
    csv_links_checked: 0,
    svg_links_checked: 0,
    errors: [],
  };
  try {
    await check(args, reportPath, out);
  } catch (e) {
    console.error(`check-report: ${e.message}`);
    process.exit(2);
  }
  if (args.json) console.log(JSON.stringify(out));
  else {
    console.log(JSON.stringify(out, null, 2));
    for (const e of out.errors) console.error(`ERROR ${e}`);
  }
  process.exit(out.errors.length ? 1 : 0);
}

main();
