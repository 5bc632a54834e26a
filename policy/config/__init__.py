"""Each `CONFIG` section of a configuration plugin, declared once.

The plugin's own globals (`ID`, `NAME`, …, `CONFIG`) are declared in `policy.config.plugin_globals`,
`CONFIG["SETTINGS"]` in `policy.config.settings` (one `SettingKey` per key); the lists
of entries — providers, data sources, chat templates, MCP servers — by a `Section` each, here
(`policy.config.sections.SECTIONS` lists them).
The plugin reader (`policy.plugins`) checks an entry field by field against its declaration,
`policy schema` (`policy.config_schema`) describes the same fields, `policy template` and the
site's plugin.lua reference (`policy.config.reference`) name them, and a test proves they agree
for every field. A new field is one `Field` here plus the code that acts on it.
"""
