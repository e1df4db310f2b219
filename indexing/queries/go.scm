; ARCS chunker captures for Go (see indexing/chunker.py and python.scm for the capture names).

(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @import))

(function_declaration name: (identifier) @def)
(method_declaration name: (field_identifier) @def)
(type_spec name: (type_identifier) @def)
(type_alias name: (type_identifier) @def)

(field_declaration name: (field_identifier) @field)
(method_elem name: (field_identifier) @field)

(parameter_declaration name: (identifier) @bind)
(variadic_parameter_declaration name: (identifier) @bind)
(short_var_declaration left: (expression_list (identifier) @bind))
(var_spec name: (identifier) @bind)
(const_spec name: (identifier) @bind)
(range_clause left: (expression_list (identifier) @bind))
(type_parameter_declaration name: (identifier) @bind)
(labeled_statement label: (label_name) @bind)

(identifier) @ref
(field_identifier) @ref
(type_identifier) @ref
(package_identifier) @ref
