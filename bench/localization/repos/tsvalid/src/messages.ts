/** Default issue messages. Override globally with setMessages or per check with a message argument. */
const DEFAULT_MESSAGES = {
  required: "Required",
  invalid_type: "Expected {expected}, received {received}",
  string_min: "Must be at least {min} characters",
  string_max: "Must be at most {max} characters",
  string_length: "Must be exactly {length} characters",
  string_between: "Must be between {min} and {max} characters",
  email: "Invalid email",
  url: "Invalid url",
  regex: "Invalid format",
  number_min: "Must be greater than or equal to {min}",
  number_max: "Must be less than or equal to {max}",
  number_int: "Expected integer, received float",
  number_multiple: "Must be a multiple of {step}",
  array_min: "Must contain at least {min} element(s)",
  array_max: "Must contain at most {max} element(s)",
  array_unique: "Elements must be unique",
  date_invalid: "Invalid date",
  date_min: "Date must be on or after {min}",
  date_max: "Date must be on or before {max}",
  unrecognized_keys: "Unrecognized key(s) in object: {keys}",
  invalid_union: "Invalid input",
  invalid_discriminator: "Invalid discriminator value. Expected {expected}",
  invalid_literal: "Invalid literal value, expected {expected}",
} as const;

export type MessageKey = keyof typeof DEFAULT_MESSAGES;

let overrides: Partial<Record<MessageKey, string>> = {};

export function setMessages(messages: Partial<Record<MessageKey, string>>): void {
  overrides = { ...overrides, ...messages };
}

export function resetMessages(): void {
  overrides = {};
}

/** Replace `{name}` placeholders with the matching params. Unknown names are left as they are. */
export function interpolate(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

export function message(key: MessageKey, params: Record<string, unknown> = {}): string {
  return interpolate(overrides[key] ?? DEFAULT_MESSAGES[key], params);
}
