"""The rules, pure: names, identities, types, ontology, commands, deciders, settings."""
