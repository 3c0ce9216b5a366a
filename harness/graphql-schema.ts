/**
 * Checks a GraphQL document against GitHub's published schema (npm @octokit/graphql-schema), as
 * openapi.ts checks REST requests against the OpenAPI description: a field, argument or type GitHub
 * does not have is refused here, not first found in production. GitHub's node limits are checked too
 * (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#node-limit):
 * every connection asks for `first` or `last` between 1 and 100, and a query reaches at most 500,000
 * nodes.
 */
import { schema } from "@octokit/graphql-schema";
import {
  buildClientSchema,
  type DocumentNode,
  getNamedType,
  type GraphQLSchema,
  type IntrospectionQuery,
  parse,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
} from "graphql";

const MAX_PAGE = 100;
const MAX_NODES = 500_000;

/** Why a document breaks GitHub's node limits (`variables` give the page sizes it names), or null. */
function nodeLimitProblem(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
): string | null {
  const info = new TypeInfo(schema);
  let problem: string | null = null;
  const pages: number[] = [];
  let nodes = 0;
  visit(
    document,
    visitWithTypeInfo(info, {
      Field: {
        enter(field) {
          const type = info.getType();
          const connection = type !== null && getNamedType(type)?.name.endsWith("Connection") === true;
          if (!connection) return;
          const arg = field.arguments?.find((a) => a.name.value === "first" || a.name.value === "last");
          const value = !arg
            ? undefined
            : arg.value.kind === "IntValue"
              ? Number(arg.value.value)
              : arg.value.kind === "Variable"
                ? Number(variables[arg.value.name.value])
                : undefined;
          if (value === undefined || !(value >= 1 && value <= MAX_PAGE))
            problem ??= `${field.name.value}: a connection must ask for \`first\` or \`last\` between 1 and ${MAX_PAGE}`;
          pages.push(value ?? 1);
          nodes += pages.reduce((n, p) => n * p, 1);
        },
        leave() {
          const type = info.getType();
          if (type !== null && getNamedType(type)?.name.endsWith("Connection") === true) pages.pop();
        },
      },
    }),
  );
  if (nodes > MAX_NODES) problem ??= `the query reaches ${nodes} nodes, more than GitHub's ${MAX_NODES}`;
  return problem;
}

let github: GraphQLSchema | null = null;
/** Each document the app and the Action send is checked once (they send a handful). */
const checked = new Map<string, string | null>();
const parsed = new Map<string, DocumentNode>();

/** Why GitHub's schema refuses `query`, or null when it accepts it. */
export function graphqlProblem(query: string, variables: Record<string, unknown> = {}): string | null {
  const known = checked.get(query);
  if (known !== undefined) return known ?? nodeLimitProblem(github!, parsed.get(query)!, variables);
  // The introspection form: the IDL of this version defines one field twice, which buildSchema refuses.
  github ??= buildClientSchema(schema.json as unknown as IntrospectionQuery);
  let problem: string | null;
  try {
    const document = parse(query);
    const errors = validate(github, document);
    problem = errors.length > 0 ? errors.map((e) => e.message).join("; ") : null;
    parsed.set(query, document);
  } catch (error) {
    problem = (error as Error).message;
  }
  checked.set(query, problem);
  return problem ?? nodeLimitProblem(github, parsed.get(query)!, variables);
}
