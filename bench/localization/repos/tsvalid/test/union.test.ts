import { describe, expect, it } from "vitest";
import { v } from "../src/index";

const Shape = v.discriminatedUnion("kind", [
  v.object({ kind: v.literal("circle"), radius: v.number().positive() }),
  v.object({ kind: v.literal("square"), side: v.number().positive() }),
]);

describe("unions", () => {
  it("accepts any member", () => {
    const IdOrName = v.union([v.number(), v.string()]);
    expect(IdOrName.parse(3)).toBe(3);
    expect(IdOrName.parse("x")).toBe("x");
  });

  it("discriminated union picks by tag", () => {
    expect(Shape.parse({ kind: "circle", radius: 2 })).toEqual({ kind: "circle", radius: 2 });
  });

  it("unknown discriminator is a validation issue", () => {
    const result = Shape.safeParse({ kind: "triangle", base: 3 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.issues[0].code).toBe("invalid_union_discriminator");
  });
});
