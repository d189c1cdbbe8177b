" flemma-sandbox: highlighting for .chat buffers when Flemma is not
" installed (with Flemma, its own syntax/chat.vim does this). Roles, the
" tool use and tool result headers (a failed result marked), fenced blocks
" and <thinking> blocks.
"
" It never sets b:current_syntax: Flemma, loaded later by a plugin
" manager, sources every syntax/chat.vim itself and its own stops when
" that is set.
if !empty(globpath(&runtimepath, 'lua/flemma/init.lua', 0, 1))
  finish
endif

syntax case match
" a fence opened far above decides what a line is
syntax sync fromstart

" fenced blocks (json input, results, the frontmatter): three or more
" backticks, closed by the same run of backticks (\{3,} inside \z( )
" does not capture the whole run: a lookahead asks for three instead)
syntax region flemmaSandboxChatFence matchgroup=flemmaSandboxChatFenceMark
      \ start=/^\%(```\)\@=\z(`\+\)/ end=/^\z1\s*$/ keepend

syntax region flemmaSandboxChatThinking start=/^\s*<thinking\%(\s[^>]*\)\?>/ end=/<\/thinking>/

syntax match flemmaSandboxChatRole /^@\%(You\|Assistant\|System\):\s*$/
syntax match flemmaSandboxChatToolUse /^\*\*Tool Use:\*\*.*$/
syntax match flemmaSandboxChatToolResult /^\*\*Tool Result:\*\*.*$/
      \ contains=flemmaSandboxChatFailed,flemmaSandboxChatPlaceholder
syntax match flemmaSandboxChatFailed /(error)\s*$/ contained
syntax match flemmaSandboxChatPlaceholder
      \ /(\%(pending\|approved\|rejected\|denied\|aborted\))\s*$/ contained

highlight default link flemmaSandboxChatRole Title
highlight default link flemmaSandboxChatToolUse Statement
highlight default link flemmaSandboxChatToolResult Identifier
highlight default link flemmaSandboxChatFailed Error
highlight default link flemmaSandboxChatPlaceholder Todo
highlight default link flemmaSandboxChatFenceMark Delimiter
highlight default link flemmaSandboxChatThinking Comment
