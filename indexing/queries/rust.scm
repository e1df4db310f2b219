; ARCS chunker captures for Rust (see indexing/chunker.py and python.scm for the capture names).

(use_declaration argument: (_) @import)
(extern_crate_declaration name: (identifier) @import)

(function_item name: (identifier) @def)
(struct_item name: (type_identifier) @def)
(enum_item name: (type_identifier) @def)
(union_item name: (type_identifier) @def)
(trait_item name: (type_identifier) @def)
(type_item name: (type_identifier) @def)
(mod_item name: (identifier) @def)
(macro_definition name: (identifier) @def)

(field_declaration name: (field_identifier) @field)
(enum_variant name: (identifier) @field)
(function_signature_item name: (identifier) @field)
(associated_type name: (type_identifier) @field)
(declaration_list (const_item name: (identifier) @field))

(parameter pattern: (identifier) @bind)
(let_declaration pattern: (identifier) @bind)
(tuple_pattern (identifier) @bind)
(closure_parameters (identifier) @bind)
(for_expression pattern: (identifier) @bind)
(type_parameter name: (type_identifier) @bind)

(identifier) @ref
(field_identifier) @ref
(type_identifier) @ref
