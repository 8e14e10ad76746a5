// kind = "node": an npm package as a finder, driven over a names file.
//
// recall runs this file from the tree under test ({tree}/recall/finders/kinds/node/adapter.js)
// when that tree is recall's, so a base measures its own adapter, else the harness's own;
// the packages are those of the tree's lock (recall's pins, or a finder's own
// package-lock.json), installed by the harness into its cache (RECALL_NODE_MODULES or
// --modules names the node_modules folder). A package without a driver below is called
// as --call says (generic). The package's index is built once per
// process, so its cost is not a query's, and the harness's batch protocol is served on
// stdin: one JSON line {"id", "query", "limit"} in, one line {"id", "results": [{"name"}]}
// out (the bare list for a request without an id), {"id", "error"} for a bad request or
// an exception of the package. limit 0 is every hit. Each line is answered as it is
// read: the harness writes several requests before it reads their answers.
//
// Plain CommonJS with no dependencies of its own: it must run with nothing installed
// beside the packages it measures.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { pathToFileURL } = require("url");

// The protocol's stdout is the adapter's alone: what a package prints (console.log,
// process.stdout.write) goes to stderr, whose tail the harness shows with an error, never
// between two answers, where it would shift every answer after it.
const writeAnswer = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

// How each package is called on a plain list of strings, as its README shows. Each
// driver gets the loaded module, the names and the engine's options, builds what the
// package builds once, and returns search(query, limit) -> names, best first, where
// limit is a whole number, 0 for all.
const DRIVERS = {
  "fuse.js": (mod, names, options) => {
    const Fuse = typeof mod === "function" ? mod : mod.default;
    const fuse = new Fuse(names, { includeScore: true, ...options });
    return (query, limit) =>
      fuse.search(query, limit ? { limit } : undefined).map((hit) => nameOf(hit.item));
  },
  fuzzysort: (mod, names, options) => {
    const fuzzysort = typeof mod.go === "function" ? mod : mod.default;
    const prepared = options.keys ? names : names.map((name) => fuzzysort.prepare(name));
    return (query, limit) =>
      Array.from(fuzzysort.go(query, prepared, { ...options, limit }), (hit) =>
        options.keys ? nameOf(hit.obj) : hit.target,
      );
  },
  // Fzf's limit only cuts its sorted list, so one instance serves every limit.
  fzf: (mod, names, options) => {
    const fzf = new mod.Fzf(names, { ...options });
    return (query, limit) => cut(fzf.find(query), limit).map((entry) => entry.item);
  },
  "match-sorter": (mod, names, options) => {
    const list = names.slice();
    return (query, limit) => cut(mod.matchSorter(list, query, options), limit);
  },
  "fast-fuzzy": (mod, names, options) => {
    const searcher = new mod.Searcher(names, options);
    return (query, limit) => cut(searcher.search(query), limit);
  },
  // The README's filter, info, sort, for every match: its infoThresh (1e3) is a budget
  // for rendering, and the harness ranks every name it gets.
  "@leeoniya/ufuzzy": (mod, names, options) => {
    const UFuzzy = typeof mod === "function" ? mod : mod.default;
    const uf = new UFuzzy(options);
    return (query, limit) => {
      const idxs = uf.filter(names, query);
      if (idxs == null || idxs.length === 0) return [];
      const info = uf.info(idxs, names, query);
      const order = uf.sort(info, names, query);
      return cut(Array.from(order, (i) => names[info.idx[i]]), limit);
    };
  },
};

// With a `keys` option (the path presets), each candidate is a record of its path's parts,
// {path, base, dir}, for the package to search by key, and a hit is its record's path.
function pathRecord(name) {
  const slash = name.lastIndexOf("/");
  return { path: name, base: name.slice(slash + 1), dir: name.slice(0, Math.max(slash, 0)) };
}

function nameOf(item) {
  return item !== null && typeof item === "object" ? item.path : item;
}

function cut(list, limit) {
  return limit ? list.slice(0, limit) : list;
}

// A package without a driver, called as its engine says (--call): `function`, the export
// to call ("" for the module itself, or its default export), with `arguments` (query,
// names, options in the engine's order); each hit is a name, or an object holding it under
// `name_key` ("name" when empty). A promise is awaited; the hits are cut to the limit.
// Each call gets a copy of the names: a package may rewrite the list it is given.
function generic(call) {
  return (mod, names, options) => {
    let owner = mod;
    let fn = mod;
    for (const part of call.function ? call.function.split(".") : []) {
      owner = fn;
      fn = fn == null ? undefined : fn[part];
    }
    if (!call.function && typeof fn !== "function" && mod != null) fn = mod.default;
    if (typeof fn !== "function") {
      throw new TypeError(`${call.function || "the module"} is not a function`);
    }
    const key = call.name_key || "name";
    const nameOf = (hit) => {
      const name = hit !== null && typeof hit === "object" ? hit[key] : hit;
      if (typeof name !== "string") {
        throw new TypeError(`a hit must be a name or an object with a string ${JSON.stringify(key)}`);
      }
      return name;
    };
    return async (query, limit) => {
      const given = { query, names: names.slice(), options };
      const hits = await fn.apply(owner, call.arguments.map((argument) => given[argument]));
      return cut(hitList(hits).map(nameOf), limit);
    };
  };
}

// The one shape answers have: an array, or another iterable whose order is the ranking
// (a Set, a generator). A string would be iterated a letter at a time (and single letters
// are names of some corpora, so no other check would notice), an object with no iterator
// would be no hits at all, a Map gives pairs, a typed array numbers: each is that query's
// error.
function hitList(hits) {
  const iterable = hits !== null && typeof hits === "object" && Symbol.iterator in hits;
  if (Array.isArray(hits)) return hits;
  if (!iterable || hits instanceof String || hits instanceof Map || ArrayBuffer.isView(hits)) {
    const type = typeof hits === "object" && hits !== null ? hits.constructor?.name : typeof hits;
    throw new TypeError(
      `the function returned a value of type ${type ?? "object"}, not a list of hits (a single ` +
        "name is [name])",
    );
  }
  return Array.from(hits);
}

function usage(message) {
  process.stderr.write(`node adapter: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { options: "{}", limit: "0", modules: process.env.RECALL_NODE_MODULES };
  const flags = new Set([
    "--package", "--options", "--call", "--names", "--modules", "--query", "--limit",
  ]);
  for (let i = 0; i < argv.length; i += 2) {
    if (!flags.has(argv[i]) || i + 1 >= argv.length) usage(`bad argument ${argv[i]}`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ["package", "names", "modules"]) {
    if (!args[key]) usage(`--${key} is required (or RECALL_NODE_MODULES for --modules)`);
  }
  if (!/^\d+$/.test(args.limit)) usage(`--limit must be 0 or more, got ${args.limit}`);
  return args;
}

// The entry an `import` of the package reaches: a package whose `require` entry is not
// CommonJS (fzf 0.5's UMD file under "type": "module") loads through it instead.
function esmEntry(meta) {
  let entry = meta.exports;
  if (entry && typeof entry === "object" && "." in entry) entry = entry["."];
  if (entry && typeof entry === "object") entry = entry.import ?? entry.default ?? entry.node;
  if (entry && typeof entry === "object") entry = entry.default;
  return typeof entry === "string" ? entry : meta.module || meta.main || "index.js";
}

function isEmpty(mod) {
  return mod == null || (typeof mod === "object" && Object.keys(mod).length === 0);
}

async function load(name, modules) {
  const folder = path.join(modules, ...name.split("/"));
  const meta = JSON.parse(fs.readFileSync(path.join(folder, "package.json"), "utf8"));
  let mod = null;
  try {
    mod = require(require.resolve(name, { paths: [path.dirname(modules)] }));
  } catch (error) {
    if (error.code !== "ERR_REQUIRE_ESM") throw error;
  }
  if (isEmpty(mod)) mod = await import(pathToFileURL(path.join(folder, esmEntry(meta))).href);
  return mod;
}

function readNames(file) {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "");
}

function errorText(error) {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function hasId(request) {
  return request !== null && typeof request === "object" && !Array.isArray(request) && "id" in request;
}

function reply(request, body) {
  return JSON.stringify(hasId(request) ? { id: request.id, ...body } : body);
}

// One request line to one answer line: a bad request or a failing search is an error
// answer for that query, never the end of the process. A search may return a promise (a
// package called through --call), so an answer is one too; main writes them in order.
async function answer(search, line) {
  let request = null;
  let query;
  let limit;
  try {
    request = JSON.parse(line);
    if (request === null || typeof request !== "object" || Array.isArray(request)) {
      throw new TypeError("a request must be a JSON object");
    }
    query = request.query;
    limit = "limit" in request ? request.limit : 0;
    if (typeof query !== "string" || !Number.isInteger(limit) || limit < 0) {
      throw new TypeError("query must be a string and limit a whole number >= 0");
    }
  } catch (error) {
    return reply(request, { error: `bad request: ${error.message}` });
  }
  let rows;
  try {
    rows = (await search(query, limit)).map((name) => ({ name: String(name) }));
  } catch (error) {
    return reply(request, { error: errorText(error) });
  }
  return hasId(request) ? JSON.stringify({ id: request.id, results: rows }) : JSON.stringify(rows);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let options;
  try {
    options = JSON.parse(args.options);
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw new TypeError("not a JSON object");
    }
  } catch (error) {
    usage(`--options: ${error.message}`);
  }
  let driver = Object.hasOwn(DRIVERS, args.package) ? DRIVERS[args.package] : null;
  if (args.call !== undefined) {
    try {
      driver = generic(JSON.parse(args.call));
    } catch (error) {
      usage(`--call: ${error.message}`);
    }
  }
  let mod;
  try {
    if (driver === null) {
      throw new Error(`no driver for it (drivers: ${Object.keys(DRIVERS).join(", ")}; or --call)`);
    }
    mod = await load(args.package, args.modules);
  } catch (error) {
    usage(`cannot load ${args.package}: ${error.message.split("\n")[0]}`);
  }
  let names;
  try {
    names = readNames(args.names);
  } catch (error) {
    usage(`${args.names}: cannot read: ${error.message}`);
  }
  let search;
  try {
    search = driver(mod, Array.isArray(options.keys) ? names.map(pathRecord) : names, options);
  } catch (error) {
    usage(`cannot build the index of ${args.package}: ${errorText(error)}`);
  }
  if (args.query !== undefined) {
    try {
      const hits = await search(args.query, Number(args.limit));
      const rows = hits.map((name) => ({ name: String(name) }));
      writeAnswer(`${JSON.stringify(rows)}\n`);
    } catch (error) {
      process.stderr.write(`node adapter: ${errorText(error)}\n`);
      process.exitCode = 1;
    }
    return;
  }
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let written = Promise.resolve();
  lines.on("line", (line) => {
    if (line.trim() === "") return;
    const answered = answer(search, line);
    written = written.then(async () => writeAnswer(`${await answered}\n`));
  });
}

main();
