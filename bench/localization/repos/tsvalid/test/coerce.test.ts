import { describe, expect, it } from "vitest";
import { v } from "../src/index";

describe("coerce", () => {
  it("numbers from strings", () => {
    expect(v.coerce.number().parse(" 42 ")).toBe(42);
    expect(v.coerce.number().parse("1e3")).toBe(1000);
  });

  it("empty string is not a number", () => {
    expect(v.coerce.number().safeParse("").ok).toBe(false);
    expect(v.coerce.number().safeParse("   ").ok).toBe(false);
  });

  it("booleans", () => {
    expect(v.coerce.boolean().parse("Yes")).toBe(true);
    expect(v.coerce.boolean().parse("off")).toBe(false);
  });

  it("dates from ISO strings", () => {
    expect(v.coerce.date().parse("2024-02-29T00:00:00Z").getTime()).toBe(Date.UTC(2024, 1, 29));
  });
});
