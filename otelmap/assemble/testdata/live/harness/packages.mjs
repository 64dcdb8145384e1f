// Prints the "packages" block of a truth.json for a program folder: each
// direct dependency with the version its package-lock.json pins and its
// monthly npm downloads from a registry list (TSV: name, version,
// downloads_a_month, ...), when one is given.
//   node packages.mjs PROGRAM_DIR [DOWNLOADS_TSV]
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [, , dir, tsv] = process.argv;
if (!dir) {
  console.error("usage: node packages.mjs PROGRAM_DIR [DOWNLOADS_TSV]");
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8"));
const downloads = new Map();
if (tsv) {
  for (const line of readFileSync(tsv, "utf8").split("\n").slice(1)) {
    const [name, , n] = line.split("\t");
    if (name) downloads.set(name, Number(n));
  }
}
const out = {};
for (const name of Object.keys(pkg.dependencies ?? {}).sort()) {
  const version = lock.packages?.[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`${name} is not in package-lock.json`);
  out[name] = { version, downloads_a_month: downloads.get(name) ?? 0 };
}
console.log(JSON.stringify(out, null, 2));
