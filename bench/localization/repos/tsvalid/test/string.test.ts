import { describe, expect, it } from "vitest";
import { v } from "../src/index";

describe("string", () => {
  it("accepts strings", () => {
    expect(v.string().parse("hi")).toBe("hi");
  });

  it("rejects non-strings with a type message", () => {
    const result = v.string().safeParse(42);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe("Expected string, received number");
  });

  it("checks min and max", () => {
    expect(v.string().min(2).safeParse("a").ok).toBe(false);
    expect(v.string().max(2).safeParse("abc").ok).toBe(false);
  });

  it("trims before checking length", () => {
    const name = v.string().trim().min(3);
    expect(name.safeParse("  a  ").ok).toBe(false);
    expect(name.parse("  abc ")).toBe("abc");
  });

  it("between interpolates both bounds", () => {
    const result = v.string().between(3, 8).safeParse("ab");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe("Must be between 3 and 8 characters");
  });

  it("validates emails", () => {
    expect(v.string().email().safeParse("a@b.co").ok).toBe(true);
    expect(v.string().email().safeParse("not-an-email").ok).toBe(false);
  });

  it("transform is skipped when the input is invalid", () => {
    const lower = v.string().transform((s) => s.toLowerCase());
    expect(lower.parse("ABC")).toBe("abc");
    const result = lower.safeParse(42);
    expect(result.ok).toBe(false);
  });
});
