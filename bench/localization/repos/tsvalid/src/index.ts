import { ArraySchema } from "./array";
import { coerce } from "./coerce";
import { DateSchema } from "./date";
import { NumberSchema } from "./number";
import { ObjectSchema, Shape } from "./object";
import { BooleanSchema, LiteralSchema, Schema, UnknownSchema } from "./schema";
import { StringSchema } from "./string";
import { DiscriminatedUnionSchema, UnionSchema } from "./union";

export { ValidationError, formatPath } from "./errors";
export type { Issue, IssueCode, FlattenedErrors, FormattedErrors } from "./errors";
export { setMessages, resetMessages } from "./messages";
export { Schema } from "./schema";

export const v = {
  string: () => new StringSchema(),
  number: () => new NumberSchema(),
  boolean: () => new BooleanSchema(),
  date: () => new DateSchema(),
  unknown: () => new UnknownSchema(),
  literal: <T extends string | number | boolean>(value: T) => new LiteralSchema(value),
  array: <T>(element: Schema<T>) => new ArraySchema(element),
  object: <S extends Shape>(shape: S) => new ObjectSchema(shape),
  union: <T>(options: Schema<T>[]) => new UnionSchema(options),
  discriminatedUnion: (key: string, options: ObjectSchema<Shape>[]) => new DiscriminatedUnionSchema(key, options),
  enum: <T extends string>(values: readonly T[]) => new UnionSchema(values.map((value) => new LiteralSchema(value))),
  coerce,
};

export namespace v {
  export type infer<S extends Schema<unknown>> = S["_output"];
}
