; ARCS chunker captures for JavaScript/JSX (see indexing/chunker.py and python.scm for the capture names).

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression
  function: (identifier) @_fn
  arguments: (arguments . (string (string_fragment) @import))
  (#eq? @_fn "require"))
(call_expression function: (import) arguments: (arguments . (string (string_fragment) @import)))

(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(class_declaration name: (identifier) @def)
(method_definition name: (_) @def)
(variable_declarator
  name: (identifier) @def
  value: [(arrow_function) (function_expression) (generator_function) (class)])

(field_definition property: (_) @field)
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field))

(formal_parameters (identifier) @bind)
(formal_parameters (assignment_pattern left: (identifier) @bind))
(formal_parameters (rest_pattern (identifier) @bind))
(arrow_function parameter: (identifier) @bind)
(variable_declarator name: (identifier) @bind)
(object_pattern (shorthand_property_identifier_pattern) @bind)
(array_pattern (identifier) @bind)
(catch_clause parameter: (identifier) @bind)
(for_in_statement left: (identifier) @bind)

(identifier) @ref
(property_identifier) @ref
(shorthand_property_identifier) @ref
(private_property_identifier) @ref
