// The same script as a2a-sdk-py: the same team.
export { script } from "../a2a-sdk-py/script.mjs";
