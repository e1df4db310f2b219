import { describe, expect, it } from "vitest";
import { v } from "../src/index";

const User = v.object({
  id: v.number().int().positive(),
  name: v.string().min(1),
  email: v.string().email().optional(),
});

describe("object", () => {
  it("strips unknown keys by default", () => {
    expect(User.parse({ id: 1, name: "Ann", extra: true })).toEqual({ id: 1, name: "Ann" });
  });

  it("strict rejects unknown keys", () => {
    const result = User.strict().safeParse({ id: 1, name: "Ann", extra: true });
    expect(result.ok).toBe(false);
  });

  it("pick keeps strict mode", () => {
    const result = User.strict().pick(["id"]).safeParse({ id: 1, name: "Ann" });
    expect(result.ok).toBe(false);
  });

  it("rejects null with a type issue", () => {
    const result = User.safeParse(null);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.issues[0].code).toBe("invalid_type");
  });

  it("default values are not shared between parses", () => {
    const Settings = v.object({ tags: v.array(v.string()).default([]) });
    const a = Settings.parse({});
    a.tags.push("x");
    expect(Settings.parse({}).tags).toEqual([]);
  });

  it("reports nested paths", () => {
    const Team = v.object({ members: v.array(User) });
    const result = Team.safeParse({ members: [{ id: 1, name: "" }] });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.issues[0].path).toEqual(["members", 0, "name"]);
  });
});
