" :checkhealth flemma_sandbox where Neovim finds only autoload/health/ on
" 'runtimepath': an installed rock keeps its Lua modules on package.path,
" outside 'runtimepath', and copies this folder next to plugin/ and doc/.
function! health#flemma_sandbox#check() abort
  lua require("flemma_sandbox.health").check()
endfunction
