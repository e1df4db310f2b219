export type PathSegment = string | number;

export type IssueCode =
  | "invalid_type"
  | "too_small"
  | "too_big"
  | "invalid_string"
  | "not_integer"
  | "not_multiple_of"
  | "invalid_date"
  | "unrecognized_keys"
  | "invalid_union"
  | "invalid_union_discriminator"
  | "invalid_literal"
  | "not_unique"
  | "custom";

export interface Issue {
  code: IssueCode;
  path: PathSegment[];
  message: string;
  params?: Record<string, unknown>;
}

export interface FlattenedErrors {
  formErrors: string[];
  fieldErrors: Record<string, string[]>;
}

export type FormattedErrors = { _errors: string[] } & { [key: string]: FormattedErrors | string[] };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `["users", 0, "email"]` -> `users[0].email`; non-identifier keys are quoted. */
export function formatPath(path: PathSegment[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") {
      out += `[${segment}]`;
    } else if (IDENTIFIER.test(segment)) {
      out += out ? `.${segment}` : segment;
    } else {
      out += `[${segment}]`;
    }
  }
  return out;
}

export class ValidationError extends Error {
  readonly issues: Issue[];

  constructor(issues: Issue[]) {
    super(ValidationError.summarize(issues));
    this.name = "ValidationError";
    this.issues = issues;
  }

  static summarize(issues: Issue[]): string {
    return issues
      .map((issue) => (issue.path.length > 0 ? `${formatPath(issue.path)}: ${issue.message}` : issue.message))
      .join("\n");
  }

  /** Issues grouped by the first path segment; root issues go to `formErrors`. */
  flatten(): FlattenedErrors {
    const formErrors: string[] = [];
    const fieldErrors: Record<string, string[]> = {};
    for (const issue of this.issues) {
      if (issue.path.length === 0) {
        formErrors.push(issue.message);
        continue;
      }
      const key = formatPath(issue.path);
      (fieldErrors[key] ??= []).push(issue.message);
    }
    return { formErrors, fieldErrors };
  }

  /** A nested object mirroring the input, with `_errors` at every level. */
  format(): FormattedErrors {
    const root: FormattedErrors = { _errors: [] };
    for (const issue of this.issues) {
      let node: FormattedErrors = root;
      for (const segment of issue.path) {
        const key = String(segment);
        if (!(key in node) || key === "_errors") {
          node[key] = { _errors: [] };
        }
        node = node[key] as FormattedErrors;
      }
      node._errors.push(issue.message);
    }
    return root;
  }

  get firstIssue(): Issue | undefined {
    return this.issues[0];
  }
}
