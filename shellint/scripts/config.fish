# ptyhub shell integration for fish, sourced through --init-command after the user's
# configuration: hooks that report each prompt, command line, exit status (OSC 133
# A/B/C/D) and the working directory (OSC 7). The user's fish_prompt still draws the
# prompt, with the status of the last command.
if not set -q __ptyhub_installed
    set -g __ptyhub_installed 1

    function __ptyhub_status
        return $argv[1]
    end

    function __ptyhub_preexec --on-event fish_preexec
        printf '\e]133;C;cmdline_url=%s\a' (string escape --style=url -- $argv[1])
    end

    function __ptyhub_postexec --on-event fish_postexec
        set -l s $status
        printf '\e]7;file://%s%s\a\e]133;D;%s\a' (prompt_hostname) (string escape --style=url -- $PWD | string replace -a '%2F' '/') $s
    end

    if functions -q fish_prompt
        functions -c fish_prompt __ptyhub_user_prompt
    else
        function __ptyhub_user_prompt
            printf '%s> ' (prompt_pwd)
        end
    end

    function fish_prompt
        set -l s $status
        printf '\e]7;file://%s%s\a' (prompt_hostname) (string escape --style=url -- $PWD | string replace -a '%2F' '/')
        printf '\e]133;A\a'
        __ptyhub_status $s
        __ptyhub_user_prompt
        printf '\e]133;B\a'
    end
end
