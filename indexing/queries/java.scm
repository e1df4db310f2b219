; ARCS chunker captures for Java (see indexing/chunker.py and python.scm for the capture names).

(import_declaration) @import

(class_declaration name: (identifier) @def)
(interface_declaration name: (identifier) @def)
(enum_declaration name: (identifier) @def)
(record_declaration name: (identifier) @def)
(annotation_type_declaration name: (identifier) @def)
(method_declaration name: (identifier) @def)
(constructor_declaration name: (identifier) @def)

(field_declaration declarator: (variable_declarator name: (identifier) @field))
(constant_declaration declarator: (variable_declarator name: (identifier) @field))
(enum_constant name: (identifier) @field)
(record_declaration parameters: (formal_parameters (formal_parameter name: (identifier) @field)))

(formal_parameter name: (identifier) @bind)
(spread_parameter (variable_declarator name: (identifier) @bind))
(local_variable_declaration declarator: (variable_declarator name: (identifier) @bind))
(catch_formal_parameter name: (identifier) @bind)
(enhanced_for_statement name: (identifier) @bind)
(lambda_expression parameters: (identifier) @bind)
(inferred_parameters (identifier) @bind)
(type_parameter (type_identifier) @bind)
(resource name: (identifier) @bind)

(identifier) @ref
(type_identifier) @ref
