-- make lint: luacheck over lua/, plugin/, spec/, bench/ and demo/
std = "luajit"
globals = { "vim" }
max_line_length = 120
exclude_files = { "fuzz/" }
files["spec/"] = { std = "+busted" }
