/**
 * Checks a GraphQL document against GitHub's published schema (npm @octokit/graphql-schema), as
 * openapi.ts checks REST requests against the OpenAPI description: a field, argument or type GitHub
 * does not have is refused here, not first found in production.
 */
import { schema } from "@octokit/graphql-schema";
import { buildClientSchema, type GraphQLSchema, type IntrospectionQuery, parse, validate } from "graphql";

let github: GraphQLSchema | null = null;
/** Each document the app and the Action send is checked once (they send a handful). */
const checked = new Map<string, string | null>();

/** Why GitHub's schema refuses `query`, or null when it accepts it. */
export function graphqlProblem(query: string): string | null {
  const known = checked.get(query);
  if (known !== undefined) return known;
  // The introspection form: the IDL of this version defines one field twice, which buildSchema refuses.
  github ??= buildClientSchema(schema.json as unknown as IntrospectionQuery);
  let problem: string | null;
  try {
    const errors = validate(github, parse(query));
    problem = errors.length > 0 ? errors.map((e) => e.message).join("; ") : null;
  } catch (error) {
    problem = (error as Error).message;
  }
  checked.set(query, problem);
  return problem;
}
