; ARCS chunker captures for Python (see indexing/chunker.py).
; @import: module names as written   @def: names of defined functions/classes
; @field: attribute/field names a class defines   @bind: locally bound names (excluded from uses)
; @ref: every identifier (uses = refs - binds - defines - noise)

(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (_) @import)

(function_definition name: (identifier) @def)
(class_definition name: (identifier) @def)

(assignment
  left: (attribute object: (identifier) @_obj attribute: (identifier) @field)
  (#any-of? @_obj "self" "cls"))
(class_definition body: (block (expression_statement (assignment left: (identifier) @field))))

(parameters (identifier) @bind)
(lambda_parameters (identifier) @bind)
(default_parameter name: (identifier) @bind)
(typed_parameter (identifier) @bind)
(typed_default_parameter name: (identifier) @bind)
(list_splat_pattern (identifier) @bind)
(dictionary_splat_pattern (identifier) @bind)
(assignment left: (identifier) @bind)
(assignment left: (pattern_list (identifier) @bind))
(assignment left: (tuple_pattern (identifier) @bind))
(augmented_assignment left: (identifier) @bind)
(for_statement left: (identifier) @bind)
(for_statement left: (pattern_list (identifier) @bind))
(for_statement left: (tuple_pattern (identifier) @bind))
(for_in_clause left: (identifier) @bind)
(for_in_clause left: (pattern_list (identifier) @bind))
(for_in_clause left: (tuple_pattern (identifier) @bind))
(as_pattern alias: (as_pattern_target (identifier) @bind))
(named_expression name: (identifier) @bind)
(global_statement (identifier) @bind)
(nonlocal_statement (identifier) @bind)

(identifier) @ref
