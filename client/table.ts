/** Plain-text tables for the CLI: columns padded to their widest cell. */
export function printTable(header: string[], rows: string[][], indent = ''): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const row of [header, ...rows]) console.log(`${indent}${row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()}`);
}
