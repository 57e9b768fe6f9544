/** The sum of two numbers. */
export function sum(a, b) {
  return a - b;
}
