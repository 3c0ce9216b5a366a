import { formatIssue, GraphError } from "../../graph/errors.ts";
import { count } from "../../graph/model.ts";
import { readGraphFile } from "../../graph/read.ts";
import type { Io } from "../io.ts";

/** `agentrelay validate FILE...`: exit 0 when every file is valid, else one line per error. */
export async function validateCommand(files: string[], io: Io): Promise<number> {
  let failed = false;
  for (const file of files) {
    try {
      const graph = await readGraphFile(file);
      io.out(`${file}: ok (${graph.dialect}, ${count(graph.tasks.length, "task")})`);
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      failed = true;
      for (const issue of error.issues) io.out(formatIssue(issue));
    }
  }
  return failed ? 1 : 0;
}
