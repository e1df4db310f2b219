; ARCS chunker captures for TypeScript and TSX (see indexing/chunker.py and python.scm for the capture names).

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(import_require_clause source: (string (string_fragment) @import))
(call_expression
  function: (identifier) @_fn
  arguments: (arguments . (string (string_fragment) @import))
  (#eq? @_fn "require"))
(call_expression function: (import) arguments: (arguments . (string (string_fragment) @import)))

(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(function_signature name: (identifier) @def)
(class_declaration name: (type_identifier) @def)
(abstract_class_declaration name: (type_identifier) @def)
(interface_declaration name: (type_identifier) @def)
(enum_declaration name: (identifier) @def)
(type_alias_declaration name: (type_identifier) @def)
(method_definition name: (_) @def)
(abstract_method_signature name: (_) @def)
(variable_declarator
  name: (identifier) @def
  value: [(arrow_function) (function_expression) (generator_function) (class)])

(public_field_definition name: (_) @field)
(property_signature name: (_) @field)
(method_signature name: (_) @field)
(enum_body (property_identifier) @field)
(enum_assignment name: (property_identifier) @field)
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field))

(required_parameter pattern: (identifier) @bind)
(optional_parameter pattern: (identifier) @bind)
(rest_pattern (identifier) @bind)
(arrow_function parameter: (identifier) @bind)
(variable_declarator name: (identifier) @bind)
(object_pattern (shorthand_property_identifier_pattern) @bind)
(array_pattern (identifier) @bind)
(catch_clause parameter: (identifier) @bind)
(for_in_statement left: (identifier) @bind)
(type_parameter name: (type_identifier) @bind)

(identifier) @ref
(property_identifier) @ref
(shorthand_property_identifier) @ref
(private_property_identifier) @ref
(type_identifier) @ref
