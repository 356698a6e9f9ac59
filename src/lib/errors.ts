/**
 * The standard error object (gateway spec 2.7): every error the gateway generates, strict or not,
 * and every error the simulator returns uses this shape.
 */
export interface ErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | number | null;
  };
}

export function errorBody(
  message: string,
  type: string,
  code: string | number | null = null,
  param: string | null = null,
): ErrorBody {
  return { error: { message, type, param, code } };
}

export function errorJson(
  message: string,
  type: string,
  code: string | number | null = null,
  param: string | null = null,
): string {
  return JSON.stringify(errorBody(message, type, code, param));
}
