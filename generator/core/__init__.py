"""Pure building blocks shared by every stage: errors, object helpers, YAML style, ordering."""
