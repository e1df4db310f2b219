"""Business logic. Services take a Repository and Settings; they never touch HTTP."""
