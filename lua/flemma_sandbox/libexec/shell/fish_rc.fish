# fish's --init-command in a sandbox's interactive shell (cli/prompt.lua
# puts the prompt's prefix for the placeholder): after its config, fish_prompt
# wrapped. (fish: no linter reads it.)
if functions -q fish_prompt
  functions -c fish_prompt __flemma_sandbox_fish_prompt
  function fish_prompt
    printf '%s' 'PREFIX'
    __flemma_sandbox_fish_prompt $argv
  end
end
