import { describe, expect, it } from "vitest";
import { v, formatPath } from "../src/index";

describe("errors", () => {
  it("formats paths", () => {
    expect(formatPath(["users", 0, "email"])).toBe("users[0].email");
  });

  it("quotes keys that are not identifiers", () => {
    const Req = v.object({ headers: v.object({ "content-type": v.string() }) });
    const result = Req.safeParse({ headers: {} });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe('headers["content-type"]: Required');
  });

  it("flatten groups by top-level field", () => {
    const Form = v.object({ address: v.object({ city: v.string(), zip: v.string().length(5) }) });
    const result = Form.safeParse({ address: { city: 3, zip: "1" } });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.flatten().fieldErrors).toEqual({
        address: ["Expected string, received number", "Must be exactly 5 characters"],
      });
    }
  });

  it("array type message", () => {
    const result = v.array(v.string()).safeParse({ length: 1 });
    if (!result.ok) expect(result.error.message).toBe("Expected array, received object");
    const wrong = v.string().safeParse(["a"]);
    if (!wrong.ok) expect(wrong.error.message).toBe("Expected string, received array");
  });
});
