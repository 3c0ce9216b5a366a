/** Graph files the app tests commit. */
export const DIAMOND = `name: diamond
max_concurrency: 2
workstreams:
  - id: ws_a
    auto_merge: true
  - id: ws_b
    auto_merge: true
  - id: ws_c
    auto_merge: true
  - id: ws_d
    auto_merge: true
tasks:
  - id: a
    workstream_id: ws_a
    description: first
  - id: b
    workstream_id: ws_b
    dependencies: [a]
    description: left
  - id: c
    workstream_id: ws_c
    dependencies: [a]
    description: right
  - id: d
    workstream_id: ws_d
    dependencies: [b, c]
    description: join
`;

/** Three workstreams, one task each: a read-only reviewer, a standard writer and an elevated task. */
export const TIERS = `name: tiers
max_concurrency: 3
workstreams:
  - id: ws_reader
  - id: ws_writer
  - id: ws_admin
tasks:
  - id: reader
    workstream_id: ws_reader
    description: read
    isolation:
      token_tier: read_only
  - id: writer
    workstream_id: ws_writer
    description: write
  - id: admin
    workstream_id: ws_admin
    description: elevated
    isolation:
      token_tier: elevated
`;

/** Two workstreams in parallel, both merging into main (tasks that share a file conflict there). */
export const OVERLAP = `name: overlap
max_concurrency: 2
workstreams:
  - id: left
    auto_merge: true
  - id: right
    auto_merge: true
tasks:
  - id: a
    workstream_id: left
    description: left work
  - id: b
    workstream_id: right
    description: right work
`;

/**
 * `tasks` tasks in `workstreams` chains (each task after the previous one of its workstream, every
 * workstream merging into main on its own), as many running at once as there are workstreams.
 */
export function chainsGraph(tasks: number, workstreams: number): string {
  const lines = [`name: chains`, `max_concurrency: ${workstreams}`, "workstreams:"];
  for (let w = 0; w < workstreams; w++) lines.push(`  - id: ws_${w}`, "    auto_merge: true");
  lines.push("tasks:");
  for (let t = 0; t < tasks; t++) {
    const w = t % workstreams;
    lines.push(`  - id: t${t}`, `    workstream_id: ws_${w}`, `    description: task ${t}`);
    if (t >= workstreams) lines.push(`    dependencies: [t${t - workstreams}]`);
  }
  return `${lines.join("\n")}\n`;
}
